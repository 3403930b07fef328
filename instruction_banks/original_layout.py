"""The original InstructEval bank layout (``princeton-nlp/InstructEval``, folder ``instructions/``).

Layout, read as is::

    <root>/<method_dir>/<task_stem>.yaml            # model-agnostic bank
    <root>/<method_dir>/<model>/<task_stem>.yaml    # model-specific bank (low perplexity)

Each file is a YAML list of strings; the original runner's ``--index`` is the 0-based position. A
bank directory may also point at one method folder (``<root>`` = ``.../ape`` or
``.../low_perplexity_prompts``): the method then comes from the folder's own name.

Directory -> method (the original notebook's ``method_name_dict``): see :data:`METHOD_DIRS`; an
unknown directory name becomes the method name (lower-cased, non-identifier characters -> ``_``).
Task stems map to task ids with :data:`TASK_STEMS` (a stem that already is a task id is accepted).

Entry ids: ``orig-<method>-<task>-<i>``, or ``orig-<method>-<task>-<model>-<i>`` for a per-model
bank (``i`` = the position in the file). Strings are kept verbatim, leading whitespace included
(the APE banks have some); the prompt builder strips it, as the original template did.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from instructeval_tasks.selection_methods import SELECTION_METHODS
from instructeval_tasks.specs import TASK_SPECS

from .schema import BankEntry, normalize_text, text_problems

# original instructions/<dir>/ name -> method id (the selection-method registry)
METHOD_DIRS = {m.original_dir: m.name for m in SELECTION_METHODS.values() if m.original_dir}
# original file stem -> task id (each task's task_spec.yaml ``original_stem``)
TASK_STEMS = {spec.original_stem: name for name, spec in TASK_SPECS.items() if spec.original_stem}
# task id -> original file stem
TASK_TO_STEM = {task: stem for stem, task in TASK_STEMS.items()}


def is_original_data(data: Any) -> bool:
    """A YAML document in the original layout: its top level is a list."""
    return isinstance(data, list)


def method_for_dir(name: str) -> str:
    """The method of an original bank directory name (unknown names become the method name)."""
    if name in METHOD_DIRS:
        return METHOD_DIRS[name]
    method = re.sub(r"[^a-z0-9_]", "_", name.lower())
    return method if re.match(r"^[a-z]", method) else f"m_{method}"


def task_for_stem(stem: str, known: Iterable[str]) -> str | None:
    known = tuple(known)
    task = TASK_STEMS.get(stem, stem)
    return task if task in known else None


def locate(path: Path, root: Path) -> tuple[str | None, str | None, str | None, str]:
    """(method, model, stem, problem) of an original-layout file below ``root``."""
    rel = path.relative_to(root)
    parts = rel.parts
    stem = path.stem
    if root.name in METHOD_DIRS:
        # the bank directory is one method folder: <root>/<stem>.yaml or <root>/<model>/<stem>.yaml
        method = METHOD_DIRS[root.name]
        if len(parts) == 1:
            return method, None, stem, ""
        if len(parts) == 2:
            return method, parts[0], stem, ""
    else:
        if len(parts) == 2:
            return method_for_dir(parts[0]), None, stem, ""
        if len(parts) == 3:
            return method_for_dir(parts[0]), parts[1], stem, ""
        if len(parts) == 1 and root.parent != root:
            # a file directly in the bank directory: the directory itself is the method folder
            return method_for_dir(root.name), None, stem, ""
    return None, None, None, (
        f"not where the original layout puts a bank (<method_dir>/<task>.yaml or "
        f"<method_dir>/<model>/<task>.yaml below {root})"
    )


def check_original_file(path: Path, root: Path, data: list, known: Iterable[str]) -> tuple[list[BankEntry], list[str]]:
    """Validate one original-layout file (a YAML list of strings), collecting every problem."""
    known = tuple(known)
    errors: list[str] = []
    method, model, stem, problem = locate(path, root)
    if problem:
        return [], [f"{path}: {problem}"]
    task = task_for_stem(stem, known)
    if task is None:
        stems = ", ".join(TASK_STEMS)
        errors.append(f"{path}: unknown task file stem {stem!r}; original stems: {stems} (or a task id)")
    if not data:
        errors.append(f"{path}: an original-layout bank is a non-empty list of strings; the list is empty")
    if errors:
        return [], errors
    prefix = f"orig-{method}-{task}" + (f"-{model}" if model else "")
    rel = str(path.relative_to(root.parent if root.name in METHOD_DIRS else root))
    entries = []
    texts: dict[str, str] = {}
    for i, text in enumerate(data):
        where = f"item {i}"
        if not isinstance(text, str):
            errors.append(f"{path}: {where}: expected a string, got {type(text).__name__} ({text!r})")
            continue
        problems = text_problems(method, text)
        if problems:
            errors.extend(f"{path}: {where}: {p}" for p in problems)
            continue
        key = normalize_text(text)
        if method != "null" and key in texts:
            errors.append(f"{path}: {where}: duplicate instruction text (same as {texts[key]}, ignoring case and whitespace)")
            continue
        texts[key] = where
        extra = {"original_path": rel, "original_index": i}
        entries.append(BankEntry(f"{prefix}-{i}", text, method, task, i, model, str(path), extra))
    return entries, errors
