"""Fixtures of the Instruction Induction tests: a tiny raw data folder for all 24 tasks (the original
file format, with each task's extra fields) and scripted harness LMs.

The rows are written by hand per task format so that prompts and scores can be checked exactly
without ``../shared``. ``OracleLM`` answers every ``Input: X`` block with the gold answer of X (plus
trailing noise the original's normalisation must cut); ``ii.ScriptedLM`` (the ``scripted_lm`` fixture of tests/conftest.py) returns fixed strings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from instructeval_tasks.ii.names import INDUCTION_TASKS


def _plain(prefix: str, n: int, offset: int = 0) -> list[dict[str, Any]]:
    return [{"input": f"{prefix} {i + offset}", "output": f"out {prefix} {i + offset}"} for i in range(n)]


def task_examples(task: str, split: str) -> list[dict[str, Any]]:
    """Examples of ``task`` in the original's field layout; execute and induce rows differ."""
    n, offset = (3, 0) if split == "execute" else (6, 100)
    if task == "cause_and_effect":
        return [{"cause": f"Cause {i + offset}.", "effect": f"Effect {i + offset}."} for i in range(n)]
    if task == "common_concept":
        return [{"concept": f"share trait {i + offset}.", "items": [f"thing {i + offset}", "b", "c"],
                 "all_common_concepts": [f"share trait {i + offset}.", f"are alike {i + offset}."]} for i in range(n)]
    rows = _plain(task.replace("_", " "), n, offset)
    if task == "rhymes":
        for r in rows:
            r["other_rhymes"] = [r["output"], "rhyme " + r["output"]]
    elif task.startswith("translation_"):
        for r in rows:
            r["possible_translations"] = ["alt " + r["output"], r["output"]]
    elif task == "word_in_context":
        for r in rows:
            r["possible_outputs"] = [r["output"], "no"]
    elif task == "taxonomy_animal":
        for r in rows:
            r["output"] = "cat, dog"
    return rows


def write_raw_dir(root: Path, tasks=INDUCTION_TASKS, splits=("execute", "induce")) -> Path:
    for task in tasks:
        for split in splits:
            examples = task_examples(task, split)
            path = root / "instruction_induction" / "raw" / split / f"{task}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            payload = {"metadata": {"num_examples": len(examples)},
                       "examples": {str(i + 1): e for i, e in enumerate(examples)}}
            path.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def ii_data_dir(tmp_path_factory) -> Path:
    return write_raw_dir(tmp_path_factory.mktemp("ii_data"))


_LAST_INPUT = re.compile(r"Input: (.*)\nOutput:$", re.S)


def oracle(answers_by_input: dict[str, str]):
    """A reply function giving the gold answer of the context's last ``Input:`` block, with noise after it."""

    def reply(context: str) -> str:
        match = _LAST_INPUT.search(context.rsplit("\n\n", 1)[-1])
        if match is None:
            return "no input block"
        return f" {answers_by_input.get(match.group(1), 'unknown')}\n\nInput: next one"

    return reply


@pytest.fixture(scope="session")
def ii(scripted_lm):
    """The helpers of this folder (test modules take them from here rather than importing conftest)."""

    class Helpers:
        ScriptedLM = scripted_lm
        oracle = staticmethod(oracle)
        task_examples = staticmethod(task_examples)
        write_raw_dir = staticmethod(write_raw_dir)

    return Helpers
