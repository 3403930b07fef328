"""Fixtures of the Natural Instructions tests: tiny task files in the benchmark's format, written by hand
(no instance text of the real tasks), in a data directory of the plugin's layout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

# rouge_score imports absl.logging, whose handler keeps the sys.stderr of the moment (here pytest's
# capture) and closes it when a later logging.config.dictConfig closes every handler (import-linter's,
# in tests/test_architecture.py): the session's capture stream dies. A handler writing to
# sys.__stderr__ is one absl never closes.
import absl.logging  # noqa: E402

absl.logging.get_absl_handler().python_handler.stream = sys.__stderr__

TOY_TASK = "task190_snli_classification"  # a known task name; the file's content is the toy below


def toy_task(n_instances: int = 3, *, multiline: bool = False) -> dict[str, Any]:
    outputs = (lambda i: [f"line {i}\nsecond {i}"]) if multiline else (lambda i: [f"Yes {i}.", f"yep {i}"])
    return {
        "Contributors": ["nobody"],
        "Categories": ["Textual Entailment"],
        "Definition": ["Say whether the sentence holds. "],
        "Positive Examples": [
            {"input": "Ice is cold.", "output": "Yes", "explanation": "Ice is frozen water."},
            {"input": "Fire is wet.", "output": "No", "explanation": "Fire is dry"},
            {"input": "Snow is white.", "output": "Yes", "explanation": "It is."},
        ],
        "Negative Examples": [
            {"input": "Rain is dry.", "output": "Yes", "explanation": "Rain is wet, so the answer is No."},
            {"input": "-", "output": "-", "explanation": "-"},
        ],
        "Instances": [{"id": f"task190-{i}", "input": f"Claim {i}.", "output": outputs(i)} for i in range(n_instances)],
        "Instance License": ["Unknown"],
    }


def write_task(root: Path, payload: dict[str, Any], task: str = TOY_TASK) -> Path:
    path = root / "natural_instructions" / "tasks" / f"{task}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=4), encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def ni_data_dir(tmp_path_factory) -> Path:
    return write_task(tmp_path_factory.mktemp("ni_data"), toy_task())


@pytest.fixture(scope="session")
def ni(scripted_lm):
    """The helpers of this folder (test modules take them from here rather than importing conftest)."""

    class Helpers:
        ScriptedLM = scripted_lm
        toy_task = staticmethod(toy_task)
        write_task = staticmethod(write_task)
        TOY_TASK = "instructeval_ni_" + TOY_TASK

    return Helpers
