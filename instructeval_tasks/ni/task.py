"""``NaturalInstructionsTask``: the harness task class of the ``instructeval_ni_*`` YAMLs.

An ``InstructEvalTask`` (same metadata keys) on a Super-NaturalInstructions task file
(``source.read_task_file``):

- the evaluated rows are the file's ``Instances[:100]`` (with ``test_sample``, a seeded sample of
  them); demonstrations (only with ``--num_fewshot K``) are drawn from its ``Positive Examples``,
  never from its instances;
- the instruction: a literal ``instruction`` or a bank ``method`` (``null``, ``generic``, ...) as for
  every task; with neither (or with method ``ni_header``), the task's own header rendered under
  ``instruction_encoding`` (``prompt.render_header``; default ``definition_pos2``, the benchmark's
  standard), recorded as method ``ni_header`` with id ``ni_header-<task>-<encoding>``; that id given
  back as ``instruction_id`` (with method ``ni_header``) selects the same header;
- greedy generation of at most 128 tokens (Tk-Instruct's output length), stopping at the first
  newline unless an output of the file (an instance's or a positive example's) spans lines, then
  only at EOS;
- ``exact_match`` and ``rougeL``: the benchmark's per-instance scores of the generation
  (``metrics.score``; cut at its first newline when the task stops there, as a backend honouring
  ``until`` returns it), as fractions (the benchmark reports them times 100).

``truncate_words`` and ``perturbation`` are InstructEval protocol knobs without a counterpart here:
setting them is an error rather than a silent no-op.
"""

from __future__ import annotations

from typing import Any

import datasets

from ..encodings import ALL_ENCODINGS, NI_DEFAULT_ENCODING, NI_ENCODINGS
from ..instruction import Instruction, resolve_instruction
from ..options import OptionError, TaskOptions
from ..task import CHAT_PLACEMENTS, InstructEvalTask, score_tokenizer
from .metrics import score
from .names import REPOSITORY, category_of, source_name
from .prompt import encoding_parts, render_header
from .source import TaskFile, read_task_file
from .tk_prompt import MAX_SOURCE_LENGTH, TokenCounter, tk_instruct_prompt

HEADER_METHOD = "ni_header"


def spans_lines(task_file: TaskFile) -> bool:
    """Whether an acceptable output of an instance, or a positive example's output, holds a newline."""
    return any("\n" in o.strip() for row in task_file.instances for o in row["outputs"]) or any(
        "\n" in e["output"].strip() for e in task_file.positive_examples)


class NaturalInstructionsTask(InstructEvalTask):
    """One Natural Instructions task file; see the module docstring."""

    def __init__(self, data_dir=None, cache_dir=None, download_mode=None, config: dict | None = None) -> None:
        config = dict(config or {})
        metadata = dict(config.get("metadata") or {})
        for key in ("truncate_words", "perturbation"):
            if metadata.get(key) is not None:
                raise OptionError(
                    f"{config.get('task')}: metadata {key} is not supported by the Natural Instructions tasks "
                    f"(the benchmark's instances as they are); leave it unset"
                )
        task = source_name(metadata.get("instructeval_task") or config["task"])
        self.task_file: TaskFile = read_task_file(task, TaskOptions.from_metadata(metadata).data_dir)
        if spans_lines(self.task_file):
            config["generation_kwargs"] = {**(config.get("generation_kwargs") or {}), "until": []}
        super().__init__(data_dir=data_dir, cache_dir=cache_dir, download_mode=download_mode, config=config)
        self._tk_counter: TokenCounter | None = None
        if self.options.prompt_format == "tk-instruct":
            self._tk_counter = self._tk_setup(metadata)

    @property
    def source_task(self) -> str:
        return source_name(self.spec.name)

    def choose_instruction(self) -> Instruction:
        o = self.options
        if o.instruction is not None or o.method not in (None, HEADER_METHOD):
            return resolve_instruction(o, self.spec)
        if o.instruction_index is not None:
            raise OptionError(f"{self.spec.task_name}: metadata instruction_index has no meaning for the task's own "
                              f"header; choose its parts with instruction_encoding")
        encoding = o.instruction_encoding or NI_DEFAULT_ENCODING
        if o.instruction_id is not None:  # a results file's id, ni_header-<task>-<encoding>
            prefix = f"{HEADER_METHOD}-{self.source_task}-"
            named = o.instruction_id.removeprefix(prefix) if o.instruction_id.startswith(prefix) else None
            if named not in ALL_ENCODINGS or (o.instruction_encoding is not None and named != o.instruction_encoding):
                raise OptionError(
                    f"{self.spec.task_name}: metadata instruction_id={o.instruction_id!r} names no header of this task "
                    f"under {o.instruction_encoding or 'an encoding'}; expected {prefix}<encoding> "
                    f"(e.g. {prefix}{encoding}), or leave instruction_id unset and set instruction_encoding"
                )
            encoding = named
        text = render_header(self.task_file, encoding)
        return Instruction(text, HEADER_METHOD, f"{HEADER_METHOD}-{self.source_task}-{encoding}", None,
                           self.task_file.path, encoding)

    # ------------------------------------------------------------------ prompt_format=tk-instruct

    def _tk_setup(self, metadata: dict) -> TokenCounter:
        """Checks of ``prompt_format=tk-instruct`` and the tokenizer its length rule counts with (``tk_prompt``)."""
        name = self.config.task
        encoding = self.instruction.encoding if self.instruction.method == HEADER_METHOD else None
        if encoding is not None and encoding not in NI_ENCODINGS:
            raise OptionError(f"{name}: prompt_format=tk-instruct renders the collator's encodings "
                              f"({', '.join(NI_ENCODINGS)}), not instruction_encoding={encoding}; choose one of them")
        if self.options.placement in CHAT_PLACEMENTS:
            raise OptionError(f"{name}: prompt_format=tk-instruct is the collator's plain-text prompt; drop "
                              f"placement={self.options.placement} and --apply_chat_template")
        tokenizer, note = score_tokenizer(self.options, metadata)
        if tokenizer is None:
            raise OptionError(f"{name}: prompt_format=tk-instruct counts the prompt's tokens with the model's tokenizer "
                              f"(the collator's {MAX_SOURCE_LENGTH}-token rule), and {note}")
        return TokenCounter.of(tokenizer)

    def tk_source(self, doc: dict) -> str:
        """The collator's string for ``doc`` (``tk_prompt``): the header's encoding (none for no instruction);
        a bank or literal instruction as its description, then the collator's instance block."""
        if self.instruction.method == HEADER_METHOD:
            return tk_instruct_prompt(self.task_file, self.instruction.encoding, doc["input"], self._tk_counter)
        return self.prompt_description + tk_instruct_prompt(None, None, doc["input"], self._tk_counter)

    def fewshot_context(self, doc, num_fewshot, system_instruction=None, apply_chat_template=False, **kwargs):
        if self._tk_counter is None:
            return super().fewshot_context(doc, num_fewshot, system_instruction=system_instruction,
                                           apply_chat_template=apply_chat_template, **kwargs)
        if num_fewshot:
            raise OptionError(f"{self.config.task}: prompt_format=tk-instruct is the collator's prompt, whose examples "
                              f"are the header's; drop --num_fewshot {num_fewshot}")
        if apply_chat_template or system_instruction:
            raise OptionError(f"{self.config.task}: prompt_format=tk-instruct is the collator's plain-text prompt; "
                              f"drop --apply_chat_template and --system_instruction")
        return self.tk_source(doc)

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        rows = [dict(row) for row in self.task_file.instances]
        self._data_source = self.task_file.path
        if self.options.test_sample is not None:
            rows = [rows[i] for i in self.draw_test_ids(None, len(rows), f"{len(rows)} instances")]
        self.dataset = datasets.DatasetDict({self.config.test_split: datasets.Dataset.from_list(rows)})

    def demo_pool(self) -> datasets.Dataset | list:
        """The positive examples the header does not already show (demonstrations never repeat them)."""
        examples = self.task_file.positive_examples[self.header_positives():]
        return datasets.Dataset.from_list([{"input": e["input"], "outputs": [e["output"]]} for e in examples]) if examples else []

    def header_positives(self) -> int:
        """How many of the file's positive examples the instruction's header shows (the first ones)."""
        if self.instruction.method != HEADER_METHOD or self.instruction.encoding is None:
            return 0
        components, n_pos, _, _ = encoding_parts(self.instruction.encoding)
        if "positive_examples" not in components:
            return 0
        return len(self.task_file.positive_examples) if n_pos is None else min(n_pos, len(self.task_file.positive_examples))

    def process_results(self, doc: dict, results: list) -> dict[str, float]:
        prediction = results[0]
        if "\n" in (self.config.generation_kwargs.get("until") or []):  # as a backend that honours `until` returns it
            prediction = prediction.split("\n", 1)[0]
        return score(prediction, doc["outputs"])

    def protocol_record(self) -> dict[str, Any]:
        record = super().protocol_record()
        record.update(
            ni_task=self.source_task,
            ni_category=category_of(self.spec.name),
            ni_source=REPOSITORY,
            ni_until=list(self.config.generation_kwargs.get("until") or []),
            prompt_format=self.options.prompt_format or "schema",
            demo_source="Positive Examples" if record.get("demo_ids") else None,
        )
        return record
