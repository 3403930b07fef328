"""``InstructEvalTask``: the harness task class behind every ``instructeval_*`` YAML.

It reads the InstructEval keys of the task metadata (``options.TaskOptions``), then:

- loads the data (HF hub by default, local JSONL with ``data_dir``), optionally a seeded
  test sample and word truncation;
- sets the prompt ``description`` to the resolved instruction, inserted verbatim (never rendered);
- replaces the harness's per-document demo sampler with one fixed demo set per ``demo_seed``;
- scores multiple choice with ``acc``, ``acc_norm`` and ``acc_per_token`` (the original's rule and
  tie order, when the model's tokenizer is reachable) and generation with HELM
  ``quasi_exact_match`` of the first line (``scoring.first_line``);
- records instruction, demo seed, K, demo ids, data source and template hash in the results'
  ``configs[<task>].metadata``.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

import datasets
from lm_eval.api.task import ConfigurableTask

from . import __version__
from .data import load_splits
from .demos import FixedDemoSampler, class_labels
from .instruction import resolve_instruction
from .options import CHAT_PLACEMENTS, OptionError, TaskOptions, first_user_turn_prefixed
from .perturbed import PerturbedText, add_perturbed_fields, perturbation_record
from .rows import ROW_FIELDS, repeated_rows
from .sampling import MissingClassError, select_indices, truncate_fields
from .scoring import choice_predictions, continuation_token_counts, first_line, quasi_exact_match
from .specs import get_spec

log = logging.getLogger(__name__)

PER_TOKEN_METRIC = "acc_per_token"


@functools.lru_cache(maxsize=8)
def _load_tokenizer(name: str, gguf_file: str | None, revision: str | None):
    from transformers import AutoTokenizer

    kwargs: dict[str, Any] = {}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    if revision:
        kwargs["revision"] = revision
    return AutoTokenizer.from_pretrained(name, **kwargs)


def score_tokenizer(options: TaskOptions, metadata: dict[str, Any]):
    """The tokenizer that counts continuation tokens for ``acc_per_token``, or ``(None, reason)``.

    Looked up as ``score_tokenizer``, else the model_args ``tokenizer``, else ``pretrained``
    (with its ``gguf_file`` and ``revision``); the harness merges model_args into task metadata.
    """
    name = options.score_tokenizer or metadata.get("tokenizer") or metadata.get("pretrained")
    if not isinstance(name, str) or not name:
        return None, "no tokenizer named (set model_args pretrained=..., or metadata score_tokenizer=...)"
    same_as_model = name == metadata.get("pretrained") and not options.score_tokenizer
    gguf_file = metadata.get("gguf_file") if same_as_model else None
    revision = metadata.get("revision") if same_as_model else None
    try:
        return _load_tokenizer(name, gguf_file, revision), name
    except Exception as err:  # unreachable hub, unknown repo, API model names
        return None, f"tokenizer {name!r} could not be loaded ({type(err).__name__}: {err})"


def _repeated_items(spec, evaluation) -> int:
    """How many evaluated rows repeat an earlier one in every field the task reads (``rows.repeated_rows``)."""
    if spec.name not in ROW_FIELDS:  # Instruction Induction rows are checked by their own loader
        return 0
    read = [name for name in ROW_FIELDS[spec.name] if name in evaluation.column_names]
    return len(repeated_rows(spec.name, evaluation.select_columns(read)))


def setting_of(num_fewshot: int, options: TaskOptions) -> str:
    """The protocol setting a run belongs to: zero_shot, few_shot, perturbed or ordering."""
    if options.perturbation:
        return "perturbed"
    if options.order_seed is not None:
        return "ordering"
    return "few_shot" if num_fewshot else "zero_shot"


class InstructEvalTask(ConfigurableTask):
    """A harness ``ConfigurableTask`` parameterised by instruction, demo seed and K (see module doc)."""

    def __init__(self, data_dir=None, cache_dir=None, download_mode=None, config: dict | None = None) -> None:
        config = dict(config or {})
        config.pop("class", None)  # the PY_TASK route passes it through; TaskConfig rejects it
        metadata = dict(config.get("metadata") or {})
        self.spec = get_spec(metadata.get("instructeval_task") or config["task"])
        self.options = TaskOptions.from_metadata(metadata)
        if self.options.prompt_format is not None and self.spec.kind != "ni":
            raise OptionError(f"{config['task']}: metadata prompt_format applies to the Natural Instructions tasks "
                              f"(instructeval_ni_*) only; leave it unset")
        self.instruction = self.choose_instruction()
        self.prompt_description = self.describe(self.instruction)
        # chat-user: no description (no system turn of ours); the instruction heads the first user turn
        self._user_instruction = ""
        if self.options.placement == "chat-user" and self.prompt_description:
            self._user_instruction, self.prompt_description = self.prompt_description, ""
        config["description"] = self.prompt_description
        # A non-empty process_results tells the harness not to look metrics up by name:
        # this class computes them in process_results() below.
        config["process_results"] = "InstructEvalTask.process_results"
        self._tokenizer = None
        self._tokenizer_note: str | None = None
        if config.get("output_type") == "multiple_choice":
            self._tokenizer, self._tokenizer_note = score_tokenizer(self.options, metadata)
            if self._tokenizer is None:
                log.warning("%s: %s is not reported: %s", config["task"], PER_TOKEN_METRIC, self._tokenizer_note)
                config["metric_list"] = [m for m in config.get("metric_list") or [] if m.get("metric") != PER_TOKEN_METRIC]
        self._token_counts: dict[str, list[int]] = {}
        self._pair_counts: dict[tuple[str, str], int] = {}  # (context, continuation) -> its tokens
        self._label_tokens: dict[str, set[int]] = {}  # continuation -> its token counts (choice_token_counts)
        self._data_source = ""
        self._test_ids: list[int] | None = None
        self._repeated_items = 0
        self.truncation: dict[str, Any] | None = None  # set by a sweep run with --allow-truncation (sweep.window)
        if self.options.perturbation:
            # Demos keep the clean template; only the test example reads the perturbed fields.
            clean = config["doc_to_text"]
            config["fewshot_config"] = {**(config.get("fewshot_config") or {}), "doc_to_text": clean}
            config["doc_to_text"] = PerturbedText(clean)
        super().__init__(config=config)
        self.sampler = FixedDemoSampler(
            self.demo_pool(),
            self.spec,
            demo_seed=self.options.demo_seed,
            order_seed=self.options.order_seed,
            order_mode=self.options.order_mode,
            truncate_words=self.options.truncate_words,
        )

    # ------------------------------------------------------------------ data

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        cfg = self.config
        eval_split = cfg.test_split or cfg.validation_split
        train_split = cfg.fewshot_split or cfg.training_split
        train, evaluation, self._data_source = load_splits(
            self.spec,
            data_dir=self.options.data_dir,
            dataset_path=cfg.dataset_path,
            dataset_name=cfg.dataset_name,
            train_split=train_split,
            eval_split=eval_split,
            dataset_kwargs=dataset_kwargs,
        )
        if self.options.test_sample is not None:
            labels = class_labels(evaluation, self.spec)
            evaluation = evaluation.select(self.draw_test_ids(labels, len(evaluation), f"an eval split of {len(evaluation)} rows"))
        self._repeated_items = _repeated_items(self.spec, evaluation)
        if self._repeated_items:  # a local eval file refuses repeats (data.py); an HF split is the paper's
            log.warning("%s: %d evaluated item(s) repeat an earlier one in every field the task reads (%s); "
                        "each weighs twice in the accuracy (recorded as repeated_items)",
                        self.spec.task_name, self._repeated_items, self._data_source)
        if self.options.truncate_words is not None:
            fields, limit = self.spec.text_fields, self.options.truncate_words
            evaluation = evaluation.map(lambda doc: truncate_fields(doc, fields, limit), load_from_cache_file=False)
        if self.options.perturbation:
            # After truncation, as the original: perturbation sees the text the model sees.
            evaluation = add_perturbed_fields(evaluation, self.spec.text_fields, self.options)
        self.dataset = datasets.DatasetDict({train_split: train, eval_split: evaluation})

    def draw_test_ids(self, labels, size: int, where: str) -> list[int]:
        """The seeded ``test_sample`` of ``size`` rows (balanced over ``labels`` when given), kept in
        ``self._test_ids``; a sample larger than the rows is an :class:`OptionError` naming ``where``."""
        try:
            self._test_ids = select_indices(labels, size, self.options.test_sample, self.options.test_seed,
                                            classes=self.spec.classes)
        except MissingClassError as err:
            raise OptionError(
                f"{self.spec.task_name}: metadata test_sample={self.options.test_sample} must be balanced over the "
                f"task's classes, but in {where}: {err}. Add rows of the missing class to the eval data"
            ) from None
        except ValueError as err:
            raise OptionError(
                f"{self.spec.task_name}: metadata test_sample={self.options.test_sample} cannot be drawn from "
                f"{where} ({err}); use a smaller test_sample"
            ) from None
        return self._test_ids

    def demo_pool(self):
        """The rows the fixed demonstration sets are drawn from (the train split)."""
        return self.dataset[self.config.fewshot_split or self.config.training_split]

    def fewshot_docs(self):
        # The fixed-demo sampler reads the train split itself; returning None stops the base
        # class from materialising the whole split into a list for its default sampler.
        return None

    # ------------------------------------------------------------------ prompt

    def choose_instruction(self):
        """The run's instruction (``instruction.resolve_instruction``), chosen before the harness loads the data."""
        return resolve_instruction(self.options, self.spec)

    def describe(self, instruction) -> str:
        """The prompt's description for ``instruction`` (``Instruction.description``)."""
        return instruction.description

    _in_chat = False  # set while a chat-template context is built (fewshot_context)

    def resolve_field(self, doc: dict[str, Any], field: str | None = None):
        # The instruction is data: never look it up as a field nor render it as Jinja.
        if field is not None and field == self.prompt_description:
            # With a chat template the description is the system message, a turn of its own: the
            # blank line that separates it from the first block in plain text would be a stray
            # "\n\n" at the end of the system turn.
            return field.removesuffix(self.config.fewshot_delimiter) if self._in_chat else field
        return super().resolve_field(doc, field)

    def fewshot_context(self, doc, num_fewshot, system_instruction=None, apply_chat_template=False, **kwargs):
        placement = self.options.placement
        if placement is not None and (placement in CHAT_PLACEMENTS) != bool(apply_chat_template):
            fix = ("is the plain-text prompt: drop --apply_chat_template, or use placement=chat-system"
                   if apply_chat_template else "needs the model's chat template: add --apply_chat_template")
            raise OptionError(f"{self.config.task}: metadata placement={placement} {fix}")
        if apply_chat_template:  # recorded in the results: which placement the harness flags gave
            self.config.metadata = {**(self.config.metadata or {}), "placement": placement or "chat-system"}
        template = kwargs.get("chat_template")
        if self._user_instruction and apply_chat_template and template is not None:
            kwargs["chat_template"] = first_user_turn_prefixed(template, self._user_instruction)
        # The harness joins --system_instruction to the description with a blank line but adds
        # nothing after it; with the null instruction there is no description, so the separator
        # before the first block has to come from here.
        if system_instruction and not self.prompt_description and not apply_chat_template:
            system_instruction = system_instruction + self.config.fewshot_delimiter
        self._in_chat = bool(apply_chat_template)
        try:
            return super().fewshot_context(
                doc, num_fewshot, system_instruction=system_instruction, apply_chat_template=apply_chat_template, **kwargs
            )
        finally:
            self._in_chat = False

    def set_fewshot_seed(self, seed: int | None = None) -> None:
        # The harness passes its global few-shot seed to every task; demos follow demo_seed only.
        return None

    # ------------------------------------------------------------------ scoring

    @staticmethod
    def _doc_key(doc: dict[str, Any]) -> str:
        return json.dumps(doc, sort_keys=True, default=str)

    def construct_requests(self, doc: dict, ctx, **kwargs):
        requests = super().construct_requests(doc, ctx, **kwargs)
        if self.OUTPUT_TYPE == "multiple_choice" and self._tokenizer is not None:
            counts = self._continuation_counts([(req.arguments[0], req.arguments[1]) for req in requests])
            self._token_counts[self._doc_key(doc)] = counts
            for req, count in zip(requests, counts):
                self._label_tokens.setdefault(req.arguments[1], set()).add(count)
        return requests

    def _continuation_counts(self, pairs: list[tuple[str, str]]) -> list[int]:
        """``continuation_token_count`` of each (context, continuation) pair, each context tokenised
        once, and a pair counted before (the window check builds every request the harness then
        builds again) taken from ``self._pair_counts``."""
        todo: dict[str, list[str]] = {}
        for context, continuation in pairs:
            if (context, continuation) not in self._pair_counts:
                todo.setdefault(context, []).append(continuation)
        for context, continuations in todo.items():
            counted = continuation_token_counts(self._tokenizer, context, continuations)
            self._pair_counts.update(((context, c), n) for c, n in zip(continuations, counted))
        return [self._pair_counts[pair] for pair in pairs]

    def choice_token_counts(self) -> dict[str, int] | None:
        """``{continuation: tokens}`` of a classification task's labels as ``acc_per_token`` counted
        them, for the aggregation's choice-score estimates of a budgeted grid
        (``instructeval_tasks.estimation.choice_scores``); ``None`` before any request, for other
        kinds, or where a label's count varied with its context.

            {" World": 1, " Sports": 1, " Business": 1, " Sci/Tech": 3}
        """
        if self.spec.kind != "cls" or not self._label_tokens or any(len(c) != 1 for c in self._label_tokens.values()):
            return None
        return {label: next(iter(counts)) for label, counts in sorted(self._label_tokens.items())}

    def process_results(self, doc: dict, results: list) -> dict[str, float]:
        wanted = self._metric_fn_list.keys()
        if self.OUTPUT_TYPE == "generate_until":
            # The harness stops at "\n" only; the original keeps the first line of splitlines().
            return {"quasi_exact_match": quasi_exact_match(self.doc_to_target(doc), first_line(results[0]))}
        lls = [float(ll) for ll, _greedy in results]
        choices = self.doc_to_choice(doc)
        gold = self.doc_to_target(doc)
        counts = self._token_counts.get(self._doc_key(doc)) if PER_TOKEN_METRIC in wanted else None
        preds = choice_predictions(lls, choices, counts, self.spec.original_choice_order)
        scores = {"acc": preds["pred"] == gold, "acc_norm": preds["pred_norm"] == gold}
        if counts is not None:
            scores[PER_TOKEN_METRIC] = preds["pred_per_token"] == gold
        return {name: float(value) for name, value in scores.items() if name in wanted}

    # ------------------------------------------------------------------ provenance

    def protocol_record(self) -> dict[str, Any]:
        """What the aggregation needs to rebuild the run without guessing."""
        k = int(self.config.num_fewshot or 0)
        template = getattr(self.config.doc_to_text, "name", None)
        return {
            "instructeval_task": self.spec.name,
            "task_type": self.spec.kind,
            **self.instruction.record(),
            "num_fewshot": k,
            "setting": setting_of(k, self.options),
            "demo_seed": self.options.demo_seed,
            "order_seed": self.options.order_seed,
            "order_mode": self.options.order_mode if self.options.order_seed is not None else None,
            **perturbation_record(self.options),
            "demo_ids": self.sampler.demo_ids(k) if k else [],
            "data_source": self._data_source,
            "eval_size": len(self.dataset[self.config.test_split or self.config.validation_split]),
            "test_sample": self.options.test_sample,
            "test_seed": self.options.test_seed if self.options.test_sample else None,
            "test_ids": self._test_ids,
            **({"repeated_items": self._repeated_items} if self._repeated_items else {}),
            **({"truncation": self.truncation} if self.truncation else {}),
            "truncate_words": self.options.truncate_words,
            "template": template,
            "template_sha": getattr(self.config.doc_to_text, "sha256", None),
            "score_tokenizer": self._tokenizer_note if self._tokenizer is not None else None,
            "choice_token_counts": self.choice_token_counts(),
            "plugin_version": __version__,
        }

    def dump_config(self) -> dict:
        cfg = super().dump_config()
        cfg["metadata"] = {**(cfg.get("metadata") or {}), **self.protocol_record()}
        return cfg


def base_task_config(task: str) -> dict[str, Any]:
    """The task's harness YAML with its includes and ``!function`` tags resolved: the template of
    every in-memory variant (sweep, induction views, stock counterparts)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    from . import TASKS_DIR

    return load_yaml(TASKS_DIR / get_spec(task).yaml_path, resolve_func=True)


def task_from_config(config: dict[str, Any]) -> ConfigurableTask:
    """The harness task of a resolved config: its YAML's ``class`` (Instruction Induction has its
    own), else :class:`InstructEvalTask`. ``config`` is not changed."""
    config = dict(config)
    task_class = config.pop("class", None) or InstructEvalTask
    return task_class(config=config)
