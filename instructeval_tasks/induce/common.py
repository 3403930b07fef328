"""Shared machinery of ``instructeval induce``: train rows, seeded slices, task views, bank files.

The automatic instruction methods (``induce.perplexity``, ``induce.ape``, ``induce.execution``) read
**only the TRAIN split** of a task (the demonstration pool): :func:`load_train_rows` never opens
the evaluation split. Every random choice uses its own string-seeded ``random.Random``:

============================  ===========================================================  ==================
what                          generator key                                                drawn from
============================  ===========================================================  ==================
perplexity inputs (N)         ``instructeval-induce:ppl-inputs:<task>:<seed>``             all train rows
execution-accuracy slice      ``instructeval-induce:exec-slice:<task>:<seed>``             all train rows
APE demo set ``s``            ``instructeval-induce:ape-demos:<task>:<seed>:<s>``          train rows minus
                                                                                           the exec slice
============================  ===========================================================  ==================

Classification draws are class-balanced (``sampling.balanced_indices``), other tasks uniform, as
the task's own test and demo sampling. The exec slice uses the same key for APE selection and for
``--method execution_accuracy``, so both score an instruction on the same rows.

Rows reach the model through real ``InstructEvalTask`` objects built over a temporary data
directory that holds only train rows (:func:`write_rows_dir`), so prompts, truncation and scoring
are exactly the sweep's.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from ..fingerprint import fingerprint  # noqa: F401  (induce modules import it from here)
from ..specs import TaskSpec, get_spec
from instructeval_tasks.errors import UserError

INDUCE_VERSION = 1
DEFAULT_CANDIDATES = ("adhoc", "promptsource")
DEFAULT_TRUNCATE_WORDS = 100


class InduceError(UserError, RuntimeError):
    """A problem of an induce run (data, candidates, output folder); the message says how to fix it."""


# ------------------------------------------------------------------------------------------ data

def load_train_rows(spec: TaskSpec, data_dir: str | Path | None) -> tuple[list[dict[str, Any]], str]:
    """The task's TRAIN split as a list of rows, and where it came from. Never reads the eval split.

    With ``data_dir``: ``<data_dir>/<local_dir>/train.jsonl``; otherwise the HF dataset and train
    (``fewshot_split``/``training_split``) split named by the task YAML.
    """
    from ..data import load_hf_split, load_local_split

    if spec.kind == "ii":  # Instruction Induction: raw/induce, never raw/execute
        from ..ii.names import source_name
        from ..ii.task import load_rows

        return load_rows(source_name(spec.name), "induce", data_dir)
    if data_dir:
        root = Path(data_dir).expanduser().resolve()
        dataset = load_local_split(root, spec, "train")
        source = str(root / spec.local_dir / "train.jsonl")
    else:
        from ..task import base_task_config

        cfg = base_task_config(spec.name)
        split = cfg.get("fewshot_split") or cfg.get("training_split")
        dataset = load_hf_split(cfg["dataset_path"], cfg.get("dataset_name"), split, spec)
        source = f"hf:{cfg['dataset_path']}" + (f"/{cfg['dataset_name']}" if cfg.get("dataset_name") else "") + f":{split}"
    return [dict(row) for row in dataset], source


def induce_rng(purpose: str, task: str, *seed: Any) -> random.Random:
    """``random.Random("instructeval-induce:<purpose>:<task>:<seed...>")`` (see the module table)."""
    return random.Random(":".join(["instructeval-induce", purpose, task, *map(str, seed)]))


def draw_rows(spec: TaskSpec, rows: Sequence[Mapping[str, Any]], pool: Sequence[int], n: int, rng: random.Random, what: str) -> list[int]:
    """``n`` train-row indices from ``pool`` (balanced over the label for classification), in drawn order."""
    from ..sampling import select_indices

    labels = [rows[i][spec.label_field] for i in pool] if spec.balanced else None
    try:
        positions = select_indices(labels, len(pool), n, 0, rng, classes=spec.classes)
    except ValueError as err:
        raise InduceError(
            f"{spec.task_name}: cannot draw {n} rows for {what} from {len(pool)} train rows ({err}); use a smaller number"
        ) from None
    return [pool[p] for p in positions]


def perplexity_input_ids(spec: TaskSpec, rows: Sequence[Mapping[str, Any]], n: int, seed: int) -> list[int]:
    return draw_rows(spec, rows, range(len(rows)), n, induce_rng("ppl-inputs", spec.name, seed), "perplexity inputs")


def exec_slice_ids(spec: TaskSpec, rows: Sequence[Mapping[str, Any]], n: int, seed: int) -> list[int]:
    return draw_rows(spec, rows, range(len(rows)), n, induce_rng("exec-slice", spec.name, seed), "the execution-accuracy slice")


def demo_set_ids(
    spec: TaskSpec, rows: Sequence[Mapping[str, Any]], *, n_sets: int, n_demos: int, seed: int, exclude: Iterable[int]
) -> list[list[int]]:
    """``n_sets`` demonstration sets of ``n_demos`` train rows, none of them in ``exclude``."""
    excluded = set(exclude)
    pool = [i for i in range(len(rows)) if i not in excluded]
    return [
        draw_rows(spec, rows, pool, n_demos, induce_rng("ape-demos", spec.name, seed, s), f"APE demo set {s}")
        for s in range(n_sets)
    ]


def write_rows_dir(root: Path, spec: TaskSpec, rows: Sequence[Mapping[str, Any]]) -> Path:
    """``<root>/<local_dir>/{train,eval}.jsonl``, both holding exactly ``rows`` (train rows only).

    The zero-shot and perplexity prompts use no demonstrations, so the ``train`` file only has to
    exist; writing the same rows keeps the folder free of anything but the chosen train rows.
    """
    if spec.kind == "ii":  # the raw-file layout, both splits holding the rows as pre-built examples
        from ..ii.names import source_name
        from ..ii.source import local_path

        examples = {str(i + 1): {k: row[k] for k in ("input", "answers", "output") if k in row} for i, row in enumerate(rows)}
        text = json.dumps({"metadata": {"num_examples": len(rows)}, "examples": examples}, ensure_ascii=False)
        for split in ("execute", "induce"):
            path = local_path(root, split, source_name(spec.name))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return root
    folder = root / spec.local_dir
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(dict(row), ensure_ascii=False, default=str) + "\n" for row in rows)
    for name in ("train.jsonl", "eval.jsonl"):
        (folder / name).write_text(text, encoding="utf-8")
    return root


# ------------------------------------------------------------------------------------------ task views

def make_task(
    spec: TaskSpec,
    *,
    data_dir: str | Path,
    name: str,
    instruction: str = "",
    method: str | None = None,
    truncate_words: int | None = None,
    model_meta: Mapping[str, Any] | None = None,
):
    """An ``InstructEvalTask`` named ``name``: zero-shot, a literal ``instruction``, rows of ``data_dir``."""
    from ..task import base_task_config, task_from_config

    cfg = base_task_config(spec.name)
    cfg.pop("tag", None)
    cfg["task"] = name
    cfg["num_fewshot"] = 0
    meta: dict[str, Any] = {
        "version": 1.0,
        "instructeval_task": spec.name,
        "instruction": instruction,
        "data_dir": str(data_dir),
        "truncate_words": truncate_words,
        **dict(model_meta or {}),
    }
    if method is not None and instruction.strip():
        meta["method"] = method
    cfg["metadata"] = meta
    return task_from_config(cfg)


_FIELD_LABEL = re.compile(r"^[A-Z][A-Za-z/ ]*: ")


def input_text(task_obj, spec: TaskSpec, doc: Mapping[str, Any]) -> str:
    """A row's input for a demonstration pair: the test block without its answer-cue line.

    ``"News: X\\nCategory:"`` gives ``"X"`` (one text field: its label is dropped);
    ``"Premise: P\\nHypothesis: H\\nRelation:"`` gives ``"Premise: P\\nHypothesis: H"``.
    """
    block = task_obj.doc_to_text(dict(doc))
    body = block.rsplit("\n", 1)[0] if "\n" in block else block
    if len(spec.text_fields) == 1:
        body = _FIELD_LABEL.sub("", body, count=1)
    return body


def answer_text(task_obj, doc: Mapping[str, Any]) -> str:
    """The gold answer as a demonstration shows it (verbalizer, chosen ending, or first gold answer)."""
    target = task_obj.doc_to_target(dict(doc))
    if task_obj.OUTPUT_TYPE == "multiple_choice":
        choices = task_obj.doc_to_choice(dict(doc))
        if isinstance(target, int):
            return str(choices[target])
        if isinstance(target, str) and target.isdigit() and target not in choices:
            return str(choices[int(target)])
        return str(target)
    if isinstance(target, (list, tuple)):
        return str(target[0])
    return str(target)


def model_meta(model_args: Mapping[str, Any]) -> dict[str, Any]:
    """The model_args keys the tasks read (tokenizer for ``acc_per_token``), as the runner passes them."""
    from ..sweep.plan import MODEL_ARG_KEYS

    return {k: model_args[k] for k in MODEL_ARG_KEYS if k in model_args}


# ------------------------------------------------------------------------------------------ candidates

@dataclass(frozen=True)
class PoolEntry:
    """One candidate instruction of a pool: where it came from and its text."""

    method: str
    id: str
    text: str
    source: str

    def record(self) -> dict[str, Any]:
        from instructeval_banks import instruction_sha

        return {"method": self.method, "id": self.id, "sha": instruction_sha(self.text), "text": self.text}


def candidate_pool(
    task: str, candidates: Sequence[str] | str | None, *, bank_dir: Any = None, model_label: str | None = None
) -> list[PoolEntry]:
    """The candidate instructions of ``task``: bank methods and/or bank directories, deduplicated.

    Each item of ``candidates`` (a list or a comma string; default ``adhoc,promptsource``) is a
    method of the shipped banks with ``bank_dir`` layered on top, or else the path of a bank
    directory (every method it has for the task). Per-model banks are read for ``model_label``. Blank (null)
    instructions and texts equal to an earlier one (ignoring case and whitespace) are left out;
    structured entries contribute their default rendering.
    """
    from instructeval_banks import BankError, load_bank_dir, load_layered_bank, normalize_text

    if candidates is None:
        items = list(DEFAULT_CANDIDATES)
    elif isinstance(candidates, str):
        items = [c.strip() for c in candidates.split(",") if c.strip()]
    else:
        items = [str(c).strip() for c in candidates if str(c).strip()]
    if not items:
        raise InduceError("no candidate pool given; use --candidates METHOD[,METHOD] or a bank directory")
    pool: list[PoolEntry] = []
    seen: set[str] = set()
    layered = load_layered_bank(bank_dir)
    for item in items:
        path = Path(item).expanduser()
        if item not in layered.methods() and path.is_dir():  # a method name wins over a same-named folder
            bank = load_bank_dir(path)
            groups = []
            for method in bank.methods(task):
                try:
                    groups.append(bank.entries(method, task, model_label))
                except BankError:  # a per-model bank without this model
                    continue
            source = str(path.resolve())
        else:
            bank = layered
            try:
                groups = [bank.entries(item, task, model_label)]
            except BankError as err:
                raise InduceError(f"candidate pool {item!r} for task {task!r}: {err}") from None
            source = str(bank.root_of(item, task, model_label if (item, task, model_label) in bank.entries_by_key else None))
        for entries in groups:
            for entry in entries:
                key = normalize_text(entry.text)
                if not key or key in seen:
                    continue
                seen.add(key)
                pool.append(PoolEntry(entry.method, entry.id, entry.text, source))
    if not pool:
        raise InduceError(f"the candidate pool {items} has no non-empty instruction for task {task!r}")
    return pool


# ------------------------------------------------------------------------------------------ files

def bank_path(output: str | Path, method: str, model_label: str, task: str, suffix: str = ".yaml") -> Path:
    """``<output>/<method>/<model_label>/<task>.yaml``."""
    return Path(output).expanduser().resolve() / method / model_label / f"{task}{suffix}"


def check_bank_text(path: Path, text: str) -> list[str]:
    """Validation problems of a bank file's text, as ``instructeval banks validate`` reports them."""
    from instructeval_banks import check_bank_file

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        return [f"{path}: not valid YAML: {err}"]
    return check_bank_file(path, data=data)[1]


def finished_state(path: Path, settings_fingerprint: str) -> str:
    """``missing``, ``invalid`` (recompute), ``done`` (same settings) or ``stale`` (other settings)."""
    if not path.is_file():
        return "missing"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return "invalid"
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return "invalid"
        found = data.get("settings_fingerprint") if isinstance(data, dict) else None
    else:
        if check_bank_text(path, text):
            return "invalid"
        found = ((yaml.safe_load(text) or {}).get("provenance") or {}).get("settings_fingerprint")
    return "done" if found == settings_fingerprint else "stale"


def rounded(value: float, digits: int = 6) -> float:
    """A float rounded for the file (stable bytes across reruns of the same computation)."""
    return float(round(float(value), digits))


def spec_of(task: str) -> TaskSpec:
    return get_spec(task)
