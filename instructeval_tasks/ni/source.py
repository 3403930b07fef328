"""Reading a Natural Instructions task file: ``<data_dir>/natural_instructions/tasks/<task>.json``.

The layout is the benchmark repository's (``tasks/<task>.json``) under a folder named
``natural_instructions``: a user's clone (``git clone https://github.com/allenai/natural-instructions
<dir>/natural_instructions``) or ``../shared/data`` (12 test tasks, ``Instances[:100]`` each). The data
directory comes from the task metadata ``data_dir`` or ``$INSTRUCTEVAL_DATA_DIR``; there is no other
source (nothing is downloaded), so without one the task is an error saying how to set it.

A task file is checked when read: the fields this plugin uses must have the benchmark's types
(``Definition``: a non-empty list of strings, ``Positive Examples`` / ``Negative Examples``: lists of
``{input, output, explanation}``, ``Instances``: a non-empty list of ``{id, input, output: [strings]}``);
a problem is a :class:`NITaskFileError` naming the file and the field. The optional schema parts of the
first Natural Instructions release (``Prompt``, ``Things to Avoid``, ``Emphasis & Caution``) are read
when a file has them.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data import DatasetNotFound
from ..errors import UserError
from .names import EVALUATED_INSTANCES, REPOSITORY

LOCAL_DIR = "natural_instructions"
OPTIONAL_TEXT = {"prompt": "Prompt", "things_to_avoid": "Things to Avoid", "emphasis_and_caution": "Emphasis & Caution"}


class NIDataNotFound(DatasetNotFound):
    """No task file where the data directory says it should be (or no data directory at all)."""


class NITaskFileError(UserError, ValueError):
    """A task file that is not a Natural Instructions task; the message names the file and the field."""


@dataclass(frozen=True)
class TaskFile:
    """The parts of one task file this plugin reads; ``instances`` are the evaluated ``Instances[:100]``."""

    path: str
    definition: str
    positive_examples: tuple[dict[str, str], ...]
    negative_examples: tuple[dict[str, str], ...]
    instances: tuple[dict[str, Any], ...]
    categories: tuple[str, ...]
    optional: tuple[tuple[str, str], ...] = ()  # (component, text) of the first release's extra parts
    # the examples as the file lists them (the "-" markers kept, an explanation only where the file has one):
    # what Tk-Instruct's collator reads (``tk_prompt``); None: the checked ones above
    raw_examples: tuple[tuple[dict[str, str], ...], tuple[dict[str, str], ...]] | None = None

    def part(self, component: str) -> str | None:
        return dict(self.optional).get(component)


def local_path(data_dir: str | Path, task: str) -> Path:
    return Path(data_dir).expanduser() / LOCAL_DIR / "tasks" / f"{task}.json"


def task_path(task: str, data_dir: str | None) -> Path:
    """The task file to read; a missing one is an :class:`NIDataNotFound` saying where it was looked for."""
    layout = (f"<dir>/{LOCAL_DIR}/tasks/<task>.json (a clone of {REPOSITORY} named {LOCAL_DIR}, "
              f"or ../shared/data)")
    if not data_dir:
        raise NIDataNotFound(
            f"instructeval_ni_{task}: no data directory; pass --metadata '{{\"data_dir\": \"<dir>\"}}' "
            f"(or set $INSTRUCTEVAL_DATA_DIR) with {layout}"
        )
    path = local_path(data_dir, task)
    if not path.is_file():
        root = Path(data_dir).expanduser()
        if not root.is_dir():
            hint = f" (the data directory {root} itself does not exist)"
        elif (root / "tasks" / f"{task}.json").is_file():
            hint = f" ({root} is the clone itself: pass its parent as data_dir, the clone named {LOCAL_DIR})"
        else:
            hint = ""
        raise NIDataNotFound(f"instructeval_ni_{task}: no task file at {path}{hint}; data_dir must hold {layout}")
    return path


def read_task_file(task: str, data_dir: str | None) -> TaskFile:
    """The checked task file of ``task`` (a file stem), read once per process per file version."""
    path = task_path(task, data_dir)
    stat = path.stat()
    return _read(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def _examples(path: str, data: dict, key: str) -> tuple[dict[str, str], ...]:
    examples = data.get(key, [])
    if not isinstance(examples, list):
        raise NITaskFileError(f"{path}: {key!r} must be a list of {{input, output, explanation}}")
    out = []
    for n, example in enumerate(examples):
        if not isinstance(example, dict) or not all(isinstance(example.get(k), str) for k in ("input", "output")):
            raise NITaskFileError(f"{path}: {key}[{n}] must be an object with string input and output (and explanation)")
        if example["input"].strip() in ("", "-"):  # the benchmark's "none" marker
            continue
        out.append({"input": example["input"], "output": example["output"],
                    "explanation": example.get("explanation") if isinstance(example.get("explanation"), str) else ""})
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _read(path: str, mtime_ns: int, size: int) -> TaskFile:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise NITaskFileError(f"{path}: cannot read as a JSON task file ({type(err).__name__}: {err})") from None
    if not isinstance(data, dict):
        raise NITaskFileError(f"{path}: expected a JSON object with Definition, Positive Examples and Instances")
    definition = data.get("Definition")
    if isinstance(definition, str):
        definition = [definition]
    if not _strings(definition) or not definition[0].strip():
        raise NITaskFileError(f"{path}: 'Definition' must be a non-empty list of strings (the task's definition)")
    instances = data.get("Instances")
    if not isinstance(instances, list) or not instances:
        raise NITaskFileError(f"{path}: 'Instances' must be a non-empty list of {{id, input, output}}")
    rows = []
    for n, inst in enumerate(instances[:EVALUATED_INSTANCES]):
        if not isinstance(inst, dict) or not isinstance(inst.get("input"), str) or not _strings(inst.get("output")):
            raise NITaskFileError(
                f"{path}: Instances[{n}] must be an object with a string input and output: a non-empty list of strings")
        if any(not o.strip() for o in inst["output"]):
            raise NITaskFileError(f"{path}: Instances[{n}].output holds an empty answer; every acceptable output must "
                                  f"be non-empty text (an empty one would score any empty generation as right)")
        rows.append({"id": str(inst.get("id", n)), "input": inst["input"], "outputs": list(inst["output"])})
    categories = data.get("Categories", [])
    optional = tuple((c, data[k]) for c, k in OPTIONAL_TEXT.items()
                     if isinstance(data.get(k), str) and data[k].strip() not in ("", "-"))
    return TaskFile(
        path=path, definition=definition[0], positive_examples=_examples(path, data, "Positive Examples"),
        negative_examples=_examples(path, data, "Negative Examples"), instances=tuple(rows),
        categories=tuple(c for c in categories if isinstance(c, str)) if isinstance(categories, list) else (),
        optional=optional, raw_examples=(_raw_examples(data, "Positive Examples"), _raw_examples(data, "Negative Examples")),
    )


def _raw_examples(data: dict, key: str) -> tuple[dict[str, str], ...]:
    """The string fields of each example of ``key`` as the file has them (already checked by ``_examples``)."""
    return tuple({k: e[k] for k in ("input", "output", "explanation") if isinstance(e.get(k), str)}
                 for e in data.get(key, []) if isinstance(e, dict))
