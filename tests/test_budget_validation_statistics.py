"""The budget benchmark's validation of every reported statistic: each run's statistics from the
estimator's draws against the full grid, the pooled table, the rule that says which are resolved,
and the validity file the reports read (``aggregation/budget_validity.json``)."""

from __future__ import annotations

import doctest
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import budget_validation  # noqa: E402
from budget_validation import (METRIC, Scores, StatisticCheck, evaluate_grid, statistic_checks,  # noqa: E402
                               statistic_table, validity_document)

from instructeval_aggregation import budget_validity  # noqa: E402


def _grid(seed: int = 0, m: int = 9, n: int = 40, spread: float = 1.5) -> dict:
    """A cache grid (no label scores): null, 4 generic and 4 ad hoc instructions on ``n`` two-class items."""
    rng = np.random.default_rng(seed)
    methods = ["null"] + ["generic"] * 4 + ["adhoc"] * (m - 5)
    logits = rng.normal(0, spread, (m, 1)) + rng.normal(0, 1.5, (1, n))
    y = (rng.random((m, n)) < 1 / (1 + np.exp(-logits))).astype(int)
    return {"task": "toy", "setting": "zero_shot", "metric": METRIC, "labels": [str(j % 2) for j in range(n)],
            "rows": [{"method": methods[i], "instruction": f"i{i}", "correct": "".join(map(str, y[i]))} for i in range(m)]}


def _check(covered: bool, bias: float = 0.0, truth: float = 5.0) -> StatisticCheck:
    return StatisticCheck(bias, abs(bias), float(covered), 1, truth, 4.0)


def _run(estimator: str, **checks: StatisticCheck) -> Scores:
    return Scores(1.0, 0.5, 0.5, 0.5, 1.0, 0.95, 0.95, 0.95, 0.1, estimator=estimator, statistics=checks)


def _results() -> dict:
    """Two grids x 10 seeds at 10%, uniform design, the item-response estimator:

    - ``max``: 19 of 20 intervals cover (95%), 9 of 10 on grid b -> resolved;
    - ``min``: 18 of 20 cover (90% pooled), grid b 8 of 10: no evidence of a coverage below 85% -> resolved;
    - ``spread``: every interval covers (100%, conservative) -> resolved;
    - ``instruction_sd``: every interval covers, but on grid a (SD 4 points) the estimates are 30% low;
      grid b's SD (0.5 point) is below the floor, its relative bias does not count -> not resolved.
    """
    results = {}
    for key in ("a", "b"):
        runs = []
        for seed in range(10):
            sd = _check(True, -1.2 if key == "a" else 0.5, 4.0 if key == "a" else 0.5)
            runs.append(_run("item-response", max=_check(key == "a" or seed != 0), min=_check(key == "a" or seed > 1),
                             spread=_check(True), instruction_sd=sd))
        results[(0.1, "uniform", key, "model")] = runs
        # the subset has no statistics: it is no estimator's
        results[(0.1, "uniform", key, "subset")] = [Scores(1.0, 0.5, 0.5, 0.5, 1.0, 0.95, 0.95, 0.95, 0.1)]
    return results


def test_the_rule_needs_pooled_and_every_grid_s_coverage_and_the_sd_s_median_bias():
    table = statistic_table(_results())
    row = lambda statistic: table[("item-response", "uniform", 0.1, statistic)]  # noqa: E731
    assert row("max").coverage == pytest.approx(0.95) and row("max").resolved
    assert row("min").coverage == pytest.approx(0.9) and row("min").worst_grid == "b"
    assert row("min").worst_grid_coverage == pytest.approx(0.8) and row("min").resolved  # 8 of 10: no evidence
    assert row("spread").coverage == 1.0 and row("spread").resolved  # conservative, still resolved
    sd = row("instruction_sd")
    assert sd.coverage == 1.0 and sd.median_relative_bias == pytest.approx(-0.3) and not sd.resolved
    # the same SD estimates within 20% of grid a's value are resolved
    results = _results()
    for s in results[(0.1, "uniform", "a", "model")]:
        s.statistics["instruction_sd"] = _check(True, -0.6, 4.0)
    assert statistic_table(results)[("item-response", "uniform", 0.1, "instruction_sd")].resolved
    assert {group[0] for group in table} == {"item-response"}  # the subset's rows add nothing


def test_a_grid_is_held_against_the_rule_only_on_evidence_of_a_coverage_below_85_percent():
    """Ten intervals of one grid: 8 hits are what 95% intervals give 7% of the time (no evidence);
    5 hits are evidence (binomial p 0.01 against 85%), even where the pooled coverage clears 90%."""
    good = {key: [_check(True)] * 10 for key in "abcde"}
    row = budget_validation.statistic_row("max", {**good, "f": [_check(True)] * 8 + [_check(False)] * 2})
    assert row.worst_grid == "f" and row.resolved
    row = budget_validation.statistic_row("max", {**good, "f": [_check(True)] * 5 + [_check(False)] * 5})
    assert row.coverage == pytest.approx(55 / 60) and row.worst_grid == "f" and not row.resolved


def test_the_validity_file_round_trips_through_budget_validity(tmp_path, monkeypatch):
    table = statistic_table(_results())
    document = validity_document(table, stamp="abc1234", command="python benchmarks/budget_validation.py",
                                 settings={"seeds": 10, "grids": ["a", "b"], "caches": ["..."]})
    assert document["rule"] == budget_validity.RULE and document["measured_at"] == "abc1234"
    assert "caches" not in document["settings"]
    entry = document["resolved"]["item-response"]["uniform"]["0.1"]["min"]
    assert entry == {"coverage": 0.9, "worst_grid_coverage": 0.8, "worst_grid": "b", "worst_grid_p": 0.4557,
                     "median_relative_bias": None, "resolved": True}
    assert document["resolved"]["item-response"]["uniform"]["0.1"]["instruction_sd"]["median_relative_bias"] == -0.3
    path = tmp_path / "budget_validity.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    monkeypatch.setenv(budget_validity.TABLE_ENV, str(path))  # what a report reads in place of the shipped table
    assert budget_validity.resolution("max", "item-response", "uniform", 0.1, 100).resolved
    assert budget_validity.resolution("max", "item-response", "uniform", 0.3, 100).resolved  # the largest budget below
    why = budget_validity.resolution("instruction_sd", "item-response", "uniform", 0.1, 100).why
    assert why.startswith("not resolved at --budget 0.1: no validated budget of the uniform design")
    assert not budget_validity.resolution("max", "item-response", "uniform", 0.05, 100).resolved  # not validated
    assert not budget_validity.resolution("max", "choice scores", "uniform", 0.1, 100).resolved


def test_a_statistic_of_shrunk_draws_misses_the_full_grid_s_and_says_by_how_much():
    truth = np.array([0.5, 0.3, 0.45, 0.6, 0.7])
    # draws that put every instruction at one value, as shrunk point estimates would (spread 0)
    flat = np.full((200, 5), 0.51)
    flat[:, 0] = 0.5
    checks = statistic_checks(flat, truth, 0, np.array([False, True, True, True, True]))
    # spread over every row (the stock one's 0.50 included): 1 point drawn, 40 exact
    assert checks["spread"].covered == 0.0 and checks["spread"].bias == pytest.approx(-39.0)
    assert checks["max"].covered == 0.0 and checks["max"].bias == pytest.approx(-19.0)
    assert checks["stock_percentile"].truth == pytest.approx(50.0) and checks["stock_percentile"].bias == -50.0
    assert checks["instruction"].n == 4 and checks["instruction"].covered == 0.0
    assert "instruction_sd" not in checks  # no draws of whole grids given
    # draws spread around the truth: every statistic covered
    rng = np.random.default_rng(0)
    noisy = np.clip(truth + rng.normal(0, 0.03, (400, 5)), 0, 1)
    noisy[:, 0] = 0.5
    covered = statistic_checks(noisy, truth, 0, np.array([False, True, True, True, True]))
    assert all(covered[name].covered == 1.0 for name in ("spread", "max", "min", "avgp", "q50"))


def test_every_statistic_of_a_fully_observed_grid_is_exact():
    grid = _grid()
    scores = evaluate_grid(grid, 1.0, 0, 30, "toy:zs", "uniform", min_items=1, full_methods=("null",))
    model = scores["model"]
    assert model.estimator == "item-response" and model.share == 1.0
    assert set(model.statistics) == {"instruction", "instruction_sd", *budget_validation_statistics()}
    for name, check in model.statistics.items():
        assert check.bias == pytest.approx(0.0, abs=1e-9) and check.covered == 1.0 and check.width == pytest.approx(0.0), name
    assert model.statistics["instruction_sd"].truth > 1.0  # a grid with an instruction effect


def budget_validation_statistics() -> set[str]:
    from instructeval_aggregation.draw_statistics import STATISTICS

    return set(STATISTICS)


def test_the_item_response_estimate_is_estimate_grid_s_draw_for_draw_with_the_sd_of_the_same_draws():
    from instructeval_aggregation.bootstrap import rng_for
    from instructeval_aggregation.budgeted import estimate_grid
    from instructeval_aggregation.draw_statistics import instruction_sd_draws
    from instructeval_tasks.estimation.item_response import Cells, predictive_grids

    y, _, method_of, _ = budget_validation._matrix(_grid(1))
    rng = np.random.default_rng(3)
    observed = rng.random(y.shape) < 0.3
    observed[0] = True
    rows, cols = np.nonzero(observed)
    cells = Cells(rows, cols, y[rows, cols], *y.shape, method_of, np.arange(y.shape[1]) % 2)
    mine, sd = budget_validation.item_response_estimate(cells, 40, rng_for("t"))
    theirs = estimate_grid(cells, n_boot=40, level=0.95, rng=rng_for("t"))
    for field in ("point", "replicates", "ci_low", "ci_high", "p_best", "quantiles", "quantile_low", "quantile_high"):
        np.testing.assert_array_equal(getattr(mine, field), getattr(theirs, field), err_msg=field)
    assert mine.fit.name == theirs.fit.name == "item-response"
    assert sd.shape == (40,) and np.ptp(sd) > 0  # one SD per drawn grid
    # each the SD of the very grid whose row means are that draw's accuracies
    grids = np.concatenate(list(predictive_grids(mine.fit.crossed, cells, 40, rng_for("t"))))
    np.testing.assert_array_equal(grids.mean(axis=2), mine.replicates)
    np.testing.assert_array_equal(instruction_sd_draws(grids), sd)


def test_a_grid_with_label_scores_gives_both_estimators_statistics_the_sd_only_from_whole_grids():
    grid = _grid(2)
    gold = np.array([int(x) for x in grid["labels"]])
    lls = []
    for row in grid["rows"]:  # label scores that give each cell's answer
        right = np.array([c == "1" for c in row["correct"]])
        answer = np.where(right, gold, 1 - gold)
        scores = np.where(np.arange(2)[None] == answer[:, None], -0.5, -2.0)
        lls.append(" ".join(f"{x:.4f}" for x in scores.ravel()))
    grid["choice_scores"] = {"labels": [" yes", " no"], "token_counts": {" yes": 1, " no": 1}, "lls": lls}
    scores = evaluate_grid(grid, 0.3, 0, 30, "toy:zs", "uniform", min_items=1, full_methods=("null",))
    assert scores["model"].estimator == "choice scores" and scores["item-resp"].estimator == "item-response"
    assert "instruction_sd" not in scores["model"].statistics and "instruction_sd" in scores["item-resp"].statistics
    table = statistic_table({(0.3, "uniform", "toy:zs", name): [s] for name, s in scores.items()})
    assert {estimator for estimator, *_ in table} == {"choice scores", "item-response"}
    assert list(table)[0][0] == "item-response"  # the estimator of every grid first


def test_saved_runs_merge_only_with_the_same_settings_and_other_grids(tmp_path):
    from budget_validation import load_results, results_document

    settings = {"seeds": 10, "budgets": [0.1], "designs": ["uniform"], "grids": ["a", "b"], "draws": 300, "min_items": 1,
                "full_methods": ["null"], "simulated": False, "extend_from": 0.1, "caches": ["one"]}
    results = _results()
    first = tmp_path / "first.json"
    first.write_text(json.dumps(results_document(results, stamp="abc", command="run a,b", settings=settings, seconds=3.0)))
    other = {(0.1, "uniform", "c", "model"): results[(0.1, "uniform", "a", "model")]}
    second = tmp_path / "second.json"
    second.write_text(json.dumps(results_document(other, stamp="def", command="run c", seconds=1.0,
                                                  settings={**settings, "grids": ["c"], "caches": ["two"]})))
    merged, merged_settings, parts = load_results([first, second])
    assert merged_settings["grids"] == ["a", "b", "c"] and merged_settings["caches"] == ["one", "two"]
    assert [part["stamp"] for part in parts] == ["abc", "def"]
    assert merged[(0.1, "uniform", "a", "model")][0].statistics["min"] == _check(True)
    assert statistic_table(merged)[("item-response", "uniform", 0.1, "max")].runs == 30
    with pytest.raises(SystemExit, match="grid a, b is also in an earlier file"):
        load_results([first, first])
    seeds = tmp_path / "seeds.json"
    seeds.write_text(json.dumps(results_document(other, stamp="def", command="run c", seconds=1.0,
                                                 settings={**settings, "grids": ["c"], "seeds": 3})))
    with pytest.raises(SystemExit, match="other settings than .*first.json \\(seeds 3 vs 10\\)"):
        load_results([first, seeds])


def test_the_benchmark_s_docstring_examples_run():
    failures, _ = doctest.testmod(budget_validation)
    assert failures == 0
