"""Helpers of the sweep tests: a sweep folder's files, and "these two sweeps wrote the same bytes"."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable

import pytest

# What legitimately differs between two runs of one sweep: the time in a samples file's name, the
# "date" (a Unix time) that lm_eval records in every results file and the evaluation's duration.
_SAMPLES_STAMP = re.compile(r"_\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d+\.jsonl$")
_RESULTS_DATE = re.compile(r'^  "date": [0-9.e+-]+,$', re.MULTILINE)
_RESULTS_SECONDS = re.compile(r'^  "total_evaluation_time_seconds": "[0-9.e+-]+"', re.MULTILINE)


def sweep_files(root: Path) -> dict[str, Path]:
    """``{path relative to root, samples time stamp removed: path}``; two files of one name fail."""
    found: dict[str, Path] = {}
    # Hidden entries (lock files, the shards' claims) are the folder's machinery, not its results.
    for path in sorted(p for p in root.rglob("*") if p.is_file()
                       and not any(part.startswith(".") for part in p.relative_to(root).parts)):
        name = _SAMPLES_STAMP.sub(".jsonl", path.relative_to(root).as_posix())
        assert name not in found, f"two files for {name}: {found[name].name}, {path.name}"
        found[name] = path
    return found


def assert_same_sweep(expected: Path, actual: Path) -> None:
    """Both folders hold the same files with the same bytes, but for the times named above."""
    want, got = sweep_files(expected), sweep_files(actual)
    assert sorted(got) == sorted(want)
    for name, path in want.items():
        a, b = path.read_text(encoding="utf-8"), got[name].read_text(encoding="utf-8")
        if name.rsplit("/", 1)[-1].startswith("results_"):
            assert len(_RESULTS_DATE.findall(a)) == 1, name
            a, b = _RESULTS_DATE.sub("<date>", a), _RESULTS_DATE.sub("<date>", b)
            a, b = _RESULTS_SECONDS.sub("<seconds>", a), _RESULTS_SECONDS.sub("<seconds>", b)
        assert a == b, f"{name} differs"


@pytest.fixture
def same_sweep() -> Callable[[Path, Path], None]:
    return assert_same_sweep


@pytest.fixture
def files_of() -> Callable[[Path], dict[str, Path]]:
    return sweep_files


def budget_cells(root: Path) -> dict[str, tuple[list[int], dict[int, float]]]:
    """``{variant: (its budget items, {item: acc})}`` of every saved variant of a budgeted folder, rounds included."""
    found = {}
    for path in sorted(root.rglob("results_*.json")):
        data = json.loads(path.read_text())
        for name in data["results"]:
            rows = [json.loads(line) for line in next(root.rglob(f"samples_{name}_[0-9]*.jsonl")).read_text().splitlines()]
            found[name] = (data["configs"][name]["metadata"]["budget"]["items"], {r["doc_id"]: r["acc"] for r in rows})
    return found


@pytest.fixture(scope="session")
def budget_cells_of() -> Callable[[Path], dict[str, tuple[list[int], dict[int, float]]]]:
    return budget_cells
