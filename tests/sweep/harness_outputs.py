"""Reading what a harness sweep and a plain ``lm_eval`` run wrote (results and samples files), for
tests that compare the two."""

from __future__ import annotations

import json
from pathlib import Path


def _entries(out: Path) -> dict[str, dict]:
    found = {}
    for path in sorted(out.rglob("results_*.json")):
        data = json.loads(path.read_text())
        for name, result in data["results"].items():
            found[name] = {"meta": data["configs"][name]["metadata"], "result": result}
    return found


def _samples(out: Path, name: str) -> dict[int, dict]:
    (path,) = sorted(out.rglob(f"samples_{name}_[0-9]*.jsonl"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {(r["doc_id"], r["filter"]): r for r in rows}


def _same_answers(a: object, b: object) -> bool:
    """Logged responses equal, log-likelihoods (strings of floats) to a relative 1e-5."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_answers(x, y) for x, y in zip(a, b))
    if isinstance(a, str) and isinstance(b, str) and a != b:
        try:
            x, y = float(a), float(b)
        except ValueError:
            return False
        return abs(x - y) <= 1e-5 * max(abs(x), abs(y), 1.0)
    return a == b
