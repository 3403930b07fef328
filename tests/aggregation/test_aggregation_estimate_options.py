"""``instructeval aggregate``'s options of the budgeted estimates: ``--estimate-draws B`` and
``--no-estimate-method-effect`` reach the estimates (their records in ``summary.json``); out of
range, or spelled as before, they stop with exit code 2."""

from __future__ import annotations

import json

import pytest

from instructeval_aggregation.testing import SyntheticVariant, write_run
from instructeval_tasks.cli import main as cli_main
from instructeval_tasks.sweep.budget import Budget, assign_cells

N_ITEMS = 16
INSTRUCTIONS = [("null", "null"), ("generic", "generic-0"), ("generic", "generic-1"), ("adhoc", "adhoc-0"),
                ("adhoc", "adhoc-1")]


def _budgeted_run(folder) -> None:
    names = [f"instructeval_agnews__{iid}__zs" for _, iid in INSTRUCTIONS]
    cells = assign_cells(names, [j % 4 for j in range(N_ITEMS)], Budget(0.5, min_items=4), "agnews:zs")
    variants = []
    for i, ((method, iid), name) in enumerate(zip(INSTRUCTIONS, names)):
        items = cells[name]
        budget = {"fraction": 0.5, "seed": 0, "min_items": 4, "grid": "agnews:zs", "items": items, "n_items": N_ITEMS,
                  "grid_cells": sum(map(len, cells.values())), "grid_size": N_ITEMS * len(names)}
        variants.append(SyntheticVariant("agnews", method, iid, "zero_shot", correct=[(i + j) % 3 > 0 for j in items],
                                         doc_ids=items, n_test=N_ITEMS, metadata={"budget": budget}))
    write_run(folder, "model-a", variants)


def test_the_estimate_options_reach_the_budgeted_estimates(tmp_path):
    _budgeted_run(tmp_path / "runs")
    out = tmp_path / "out"
    assert cli_main(["aggregate", str(tmp_path / "runs"), "--out", str(out), "--bootstrap", "0", "--no-plots",
                     "--estimate-draws", "20", "--no-estimate-method-effect"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    (grid,) = summary["budget"]["grids"]
    assert (grid["n_boot"], grid["method_covariate"]) == (20, False)
    assert grid["estimator"].startswith("item-response (")
    assert {"estimate_draws": 20, "estimate_method_effect": False}.items() <= summary["options"].items()


def test_estimate_draws_out_of_range_and_the_old_spellings_stop_with_exit_code_2(tmp_path, capsys):
    _budgeted_run(tmp_path / "runs")
    base = ["aggregate", str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--no-plots"]
    assert cli_main(base + ["--estimate-draws", "5"]) == 2
    assert "--estimate-draws must be 0 (off) or at least 10" in capsys.readouterr().err
    for old in (["--irt-bootstrap", "20"], ["--no-irt-method-covariate"]):  # no aliases: the project has no release
        with pytest.raises(SystemExit) as stopped:
            cli_main(base + old)
        assert stopped.value.code == 2 and f"unrecognized arguments: {' '.join(old)}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
