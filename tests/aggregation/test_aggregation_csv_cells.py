"""CSV cells a spreadsheet would run as formulas are escaped; numbers, negative ones included, are not."""

from __future__ import annotations

import csv
import random
import re

from instructeval_aggregation import aggregate, load_runs, write_report
from instructeval_aggregation.csv_cells import safe_frame, safe_text
from instructeval_aggregation.testing import grid, sweep_record, write_run

import pandas as pd

NUMBER = re.compile(r"[+-]?\d+(\.\d+)?([eE][+-]?\d+)?")
HOSTILE = ("=", "+", "-", "@", "\t", "\r")


def test_safe_text_rule():
    for text in ("=HYPERLINK(\"http://x\")", "+1+2", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "-custom"):
        assert safe_text(text) == "'" + text
    for text in ("-1.5", "-0.000001", "+3", "-2e-05", "generic", "", "a=b", "'=quoted"):
        assert safe_text(text) == text
    frame = pd.DataFrame({"method": ["=cmd", "-x", "null"], "gain": [-1.5, 2.0, -0.25], "n": [-3, 0, 1]})
    safe = safe_frame(frame)
    assert safe["method"].tolist() == ["'=cmd", "'-x", "null"]
    assert safe["gain"].tolist() == [-1.5, 2.0, -0.25] and safe["n"].tolist() == [-3, 0, 1]
    assert frame["method"].tolist() == ["=cmd", "-x", "null"]  # the input frame is not changed


def test_every_csv_the_report_writes_is_formula_safe(tmp_path):
    """Hostile method ids, model names and instruction texts from results files never reach a CSV raw."""
    instructions = [("null", "null"), ("generic", "generic-0"), ("=cmd|' /C calc'!A0", "-x"), ("@evil", "+y")]
    runs = tmp_path / "runs"
    for model in ("=model", "SmolLM2-135M"):
        def accuracy(task, method, iid, setting, demo, order, model=model):
            rng = random.Random(f"{model}|{task}|{iid}|{setting}|{demo}|{order}")
            p = {"null": 0.6, "generic": 0.4}.get(method, 0.5)
            return [1 if rng.random() < p else 0 for _ in range(20)]

        variants = grid(["agnews", "boolq"], instructions, accuracy)
        for v in variants:
            v.instruction_text = "-" + v.instruction_id if v.method != "null" else ""
            v.metadata["model_label"] = model
        write_run(runs, model.strip("="), variants, sweep=sweep_record())
    out = tmp_path / "out"
    write_report(aggregate(load_runs([runs]), n_boot=20), out, plots=False)
    files = sorted(out.rglob("*.csv"))
    assert len(files) > 20
    negative_numbers = escaped = 0
    for path in files:
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.reader(handle):
                for cell in row:
                    if cell.startswith(HOSTILE):
                        assert NUMBER.fullmatch(cell), f"{path.name}: formula cell {cell!r}"
                        negative_numbers += cell.startswith("-")
                    escaped += cell.startswith("'") and cell[1:].startswith(HOSTILE)
    assert negative_numbers > 0  # negative gains stay numbers
    assert escaped > 0
    gains = (out / "data" / "gains.csv").read_text(encoding="utf-8")
    assert "'=cmd|' /c calc'!a0" in gains  # method ids are lower-cased and "'=model" in gains
