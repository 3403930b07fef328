"""Budgeted harness grids: every statistic from the draws, abstention where the validation does not
resolve it, a permutation test valid under the design, its power, and the per-class view."""

from __future__ import annotations

import json
import re
import math
from pathlib import Path

import numpy as np
import pytest

from instructeval_aggregation.harness_effects import harness_effects, load_harness_results
from instructeval_aggregation.harness_report import effects_table
from instructeval_aggregation.instruction_test import permutation_test
from instructeval_aggregation.issues import IssueLog

ROOT = Path(__file__).resolve().parents[2]
STAMP = "2026-01-01T00-00-00.000000"


def _write_grid(folder: Path, model: str, task: str, grid: np.ndarray, keep: np.ndarray | None = None, *,
                labels: list[str] | None = None, fraction: float = 0.3, split: dict | None = None,
                design: str | None = None) -> None:
    """A harness run's files: instruction i (row 0 = null) scored on the items ``keep[i]`` (every item
    without ``keep``: a full grid); ``labels``: each item's gold ``target`` on a multiple-choice task."""
    out = folder / model
    out.mkdir(parents=True, exist_ok=True)
    ids = [10 + 3 * j for j in range(grid.shape[1])]
    keep = np.ones(grid.shape, dtype=bool) if keep is None else keep
    results, configs = {}, {}
    for i in range(grid.shape[0]):
        iid = "null" if i == 0 else f"generic-{i}"
        name = f"{task}__{iid}"
        items = [int(j) for j in np.flatnonzero(keep[i])]
        meta = {"model_label": model,
                "harness": {"task": task, "num_fewshot": 0, "method": "null" if i == 0 else "generic", "instruction_id": iid,
                            "instruction": "" if i == 0 else f"text {iid}", "placement": "description", "test_ids": ids,
                            **({"split_classes": split} if split else {})}}
        if not keep.all():
            meta["budget"] = {"fraction": fraction, "seed": 0, "items": items, "n_items": grid.shape[1],
                              **({"design": design} if design else {})}
        results[name] = {"alias": name, "acc,none": float(grid[i, items].mean())}
        configs[name] = {"task": name, "metric_list": [{"metric": "acc"}], "metadata": meta,
                         **({"output_type": "multiple_choice"} if labels else {})}
        lines = [json.dumps({"doc_id": ids[j], "filter": "none", "acc": float(grid[i, j]),
                             "target": labels[j] if labels else "0", "filtered_resps": [["-1.0", "False"]]}) for j in items]
        (out / f"samples_{name}_{STAMP}.jsonl").write_text("\n".join(lines) + "\n")
    (out / f"results_harness__{task}.json").write_text(json.dumps({
        "results": results, "configs": configs, "config": {"model": "hf", "model_args": f"pretrained={model}"},
        "versions": {}, "n-shot": {}}))


def _grid(rng: np.random.Generator, effects: list[float], items: int, level: float = 0.0) -> np.ndarray:
    logits = level + np.asarray(effects)[:, None] + rng.normal(0, 1.5, items)[None, :]
    return (rng.random(logits.shape) < 1 / (1 + np.exp(-logits))).astype(float)


def _mask(rng: np.random.Generator, shape: tuple[int, int], share: float) -> np.ndarray:
    keep = rng.random(shape) < share
    keep[0] = True  # the stock instruction on every item
    return keep


def _effects(folder: Path, **kwargs):
    issues = IssueLog()
    out = harness_effects(load_harness_results([str(folder)], issues), issues, n_boot=200, level=0.95, seed="t",
                          n_perm=199, **kwargs)
    return out, issues


def test_a_budget_the_validation_does_not_resolve_prints_the_reason_not_a_number(tmp_path, validated):
    validated(lambda statistic, design, budget: budget >= 0.1)  # nothing below 10% is resolved
    rng = np.random.default_rng(3)
    grid = _grid(rng, [0, -1, -0.5, 0, 0.5, 1], 200)
    _write_grid(tmp_path, "m", "hellaswag", grid, _mask(rng, grid.shape, 0.02), fraction=0.02)
    out, _ = _effects(tmp_path, n_power=0)
    row = out.effects.iloc[0]
    reason = "not resolved at --budget 0.02 (needs about 20 cells per instruction; run --budget-extend 0.1)"
    assert all(math.isnan(row[name]) for name in ("min", "median", "max", "stock_percentile", "instruction_sd"))
    assert reason in row["not_resolved"] and "min, median, max, stock_percentile" in row["not_resolved"]
    assert row["stock"] == grid[0].mean()  # the stock score is exact: always printed
    shown = effects_table(out).iloc[0]
    assert shown["min"] == shown["max"] == shown["instruction SD"] == "not resolved"
    scores = out.scores.set_index("instruction")
    assert scores["score"].drop("null").isna().all() and (scores["not_resolved"].drop("null") == reason).all()
    card = out.cards[0]
    assert card.measures["maxp"].value is None and card.measures["maxp"].why == reason


def test_budgeted_statistics_come_from_the_draws_and_cover_the_full_grid(tmp_path, validated):
    rng = np.random.default_rng(5)
    effects = [0.0, -1.6, -1.0, -0.4, 0.2, 0.8, 1.4, 2.0]
    grid = _grid(rng, effects, 150)
    keep = _mask(rng, grid.shape, 0.4)
    _write_grid(tmp_path, "m", "boolq", grid, keep, fraction=0.4)
    out, issues = _effects(tmp_path, n_power=0)
    row = out.effects.iloc[0]
    exact = grid[1:].mean(axis=1)
    assert row["not_resolved"] == ""
    for name, truth in (("min", exact.min()), ("max", exact.max()), ("median", np.median(exact))):
        assert row[f"{name}_low"] <= truth <= row[f"{name}_high"], name
    points = out.scores.set_index("instruction")["score"].drop("null")
    # the point estimates are pulled together; the draws' extremes are not
    assert row["max"] - row["min"] > points.max() - points.min()
    card = out.cards[0].measures
    assert card["spread"].ci_low <= 100 * (grid.mean(axis=1).max() - grid.mean(axis=1).min()) <= card["spread"].ci_high
    assert card["maxp"].ci_low < card["maxp"].value < card["maxp"].ci_high


def test_one_value_for_every_instruction_is_not_printed_as_a_range(tmp_path, validated):
    """Few cells per instruction (the study's 2% HellaSwag grids): the draws' range is not one value."""
    rng = np.random.default_rng(11)
    grid = _grid(rng, [0.0] + list(rng.normal(0, 0.8, 20)), 200, level=-0.5)
    keep = np.zeros(grid.shape, dtype=bool)
    keep[0] = True
    for i in range(1, grid.shape[0]):
        keep[i, rng.choice(200, 10, replace=False)] = True
    _write_grid(tmp_path, "m", "hellaswag", grid, keep, fraction=0.05)
    out, _ = _effects(tmp_path, n_power=0)
    row = out.effects.iloc[0]
    points = out.scores.set_index("instruction")["score"].drop("null")
    assert row["min_high"] > row["min_low"] and row["max"] - row["min"] > points.max() - points.min()
    # (whether the intervals cover the full grid's values at such a budget is the validation's
    # question: where they do not, the shipped table leaves the statistic unresolved)


def test_the_adaptive_designs_grids_are_not_tested(tmp_path, validated):
    """Its later rounds choose cells from the outcomes: the permutation argument does not hold there."""
    rng = np.random.default_rng(6)
    grid = _grid(rng, [0.0, -2.0, -1.0, 1.0, 2.0], 120)
    _write_grid(tmp_path, "m", "boolq", grid, _mask(rng, grid.shape, 0.25), fraction=0.25, design="adaptive")
    out, _ = _effects(tmp_path, n_power=0)
    row = out.effects.iloc[0]
    assert math.isnan(row["permutation_p"]) and "not tested: the adaptive design" in row["not_resolved"]
    assert not math.isnan(row["max"])  # the statistics from the draws are still reported where resolved


def test_a_null_grid_built_from_a_real_grid_rejects_at_about_the_nominal_rate():
    cache = json.loads((ROOT / "benchmarks" / "data" / "budget_grid_smollm2.json").read_text())
    real = np.array([[c == "1" for c in row["correct"]] for row in cache["grids"]["agnews:zs"]["rows"]], dtype=float)
    rng = np.random.default_rng(0)
    assert permutation_test(real, n_perm=199, seed="real").p_value <= 0.05  # its instructions matter
    rejected = []
    for replicate in range(150):
        shuffled = np.take_along_axis(real, np.argsort(rng.random(real.shape), axis=0), axis=0)  # no instruction matters
        test = permutation_test(np.where(_mask(rng, real.shape, 0.1), shuffled, np.nan), n_perm=99, rng=rng)
        rejected.append(test.p_value <= 0.05)
    assert 0.01 <= np.mean(rejected) <= 0.10


def test_an_instruction_pushing_answers_to_one_label_shows_at_the_split_class_mix(tmp_path):
    rng = np.random.default_rng(2)
    labels = ["0", "1"] * 60  # gold-balanced rows
    yes = np.array([label == "1" for label in labels])
    p = np.full((8, len(labels)), 0.65)
    p[4:] = np.where(yes, 0.95, 0.35)[None, :]  # instructions 4-7 answer "1" more often
    grid = (rng.random(p.shape) < p).astype(float)
    _write_grid(tmp_path, "m", "boolq", grid, labels=labels, split={"0": 380, "1": 620})
    out, _ = _effects(tmp_path, n_power=0)
    # the shift moves answers between labels (the per-gold-answer test), not the score on balanced rows
    assert out.effects.iloc[0]["class_shift_p"] <= 0.01
    classes = out.classes.set_index(["instruction", "class"])
    assert classes.loc[("generic-5", "1"), "accuracy"] - classes.loc[("generic-5", "0"), "accuracy"] > 0.3
    assert classes.loc[("null", "1"), "split_share"] == pytest.approx(0.62)
    pushed = classes.loc[("generic-5", "1"), "at_split_mix"]
    expected = 0.62 * grid[5, yes].mean() + 0.38 * grid[5, ~yes].mean()
    assert pushed == pytest.approx(expected) and pushed - grid[5].mean() > 0.04  # moves the leaderboard's score
    # without the per-class statistic the balanced accuracies hide it
    assert permutation_test(grid, None, n_perm=199, seed="t").p_value > permutation_test(
        grid, np.array([int(label) for label in labels]), n_perm=199, seed="t").p_value


def test_no_evidence_of_an_effect_comes_with_the_effect_the_design_could_detect(tmp_path):
    rng = np.random.default_rng(9)
    for model, items in (("small", 40), ("large", 400)):
        _write_grid(tmp_path, model, "boolq", _grid(rng, [0.0] * 6, items))
    out, _ = _effects(tmp_path, n_power=20)
    rows = out.effects.set_index("model")
    assert (rows["permutation_p"] > 0.05).all()
    assert 0 < rows.loc["large", "detectable_sd"] < rows.loc["small", "detectable_sd"]
    assert "80% power at SD" in effects_table(out).iloc[0]["p (no effect)"]


# ---------------------------------------------------------------------------------- nine tasks


def _nine_task_run(folder: Path, y: np.ndarray, fraction: float):
    from instructeval_aggregation.testing import SyntheticVariant, write_run
    from instructeval_tasks.sweep.budget import Budget, assign_cells

    ids = ["null"] + [f"generic-{k}" for k in range(1, y.shape[0])]
    names = [f"instructeval_agnews__{iid}__zs" for iid in ids]
    cells = assign_cells(names, [j % 4 for j in range(y.shape[1])], Budget(fraction, min_items=4), "agnews:zs")
    variants = []
    for i, (iid, name) in enumerate(zip(ids, names)):
        items = cells[name]
        budget = {"fraction": fraction, "seed": 0, "min_items": 4, "grid": "agnews:zs", "items": items,
                  "n_items": y.shape[1], "grid_cells": sum(map(len, cells.values())), "grid_size": y.size}
        variants.append(SyntheticVariant("agnews", "null" if i == 0 else "generic", iid, "zero_shot",
                                         correct=list(y[i, items]), doc_ids=items, n_test=y.shape[1],
                                         metadata={"budget": budget}))
    write_run(folder, "m", variants)


def test_a_budgeted_nine_task_card_takes_its_measures_from_the_draws_or_says_not_resolved(tmp_path, validated):
    from instructeval_aggregation import aggregate, load_runs
    from instructeval_aggregation.sensitivity_card import build_cards

    rng = np.random.default_rng(4)
    y = _grid(rng, list(np.linspace(-1.5, 1.5, 9)), 80)
    _nine_task_run(tmp_path / "runs", y, 0.25)
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=0, estimate_draws=100)
    card = next(c for c in build_cards(result) if c.setting == "zero_shot")
    exact = 100 * y.mean(axis=1)
    spread = card.measures["spread"]
    assert spread.ci_low < spread.value < spread.ci_high  # an interval from the draws, not a point
    estimates = result.budget.instructions["estimate"].to_numpy()
    assert spread.value > 100 * (estimates.max() - estimates.min())  # the point estimates' spread is shrunk
    assert card.measures["maxp"].ci_low <= exact.max() + 1e-9

    validated(lambda statistic, design, budget: statistic not in ("spread", "q95", "instruction"))
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=0, estimate_draws=100)
    card = next(c for c in build_cards(result) if c.setting == "zero_shot")
    assert card.measures["spread"].value is None
    assert card.measures["spread"].why.startswith("not resolved at --budget 0.25: no validated budget")
    quantiles = result.budget.quantiles.set_index("quantile")
    assert math.isnan(quantiles.loc[0.95, "estimate"]) and quantiles.loc[0.95, "not_resolved"]
    assert not math.isnan(quantiles.loc[0.5, "estimate"])
    instructions = result.budget.instructions.set_index("instruction")
    assert math.isnan(instructions.loc["generic-3", "estimate"]) and instructions.loc["generic-3", "not_resolved"]
    assert (instructions["not_resolved"] != "").all()  # (here the null instruction is budgeted too)


def test_a_budgeted_grids_maxp_comes_from_its_draws_or_is_not_printed(tmp_path, validated):
    from instructeval_aggregation import aggregate, load_runs

    rng = np.random.default_rng(8)
    y = _grid(rng, list(np.linspace(-1.5, 1.5, 9)), 80)
    _nine_task_run(tmp_path / "runs", y, 0.25)
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=0, estimate_draws=100)
    maxp = result.tables["maxp_zero_shot"].frame.loc["generic", "agnews"]
    estimates = result.budget.instructions
    points = 100 * estimates[estimates["method"] == "generic"]["estimate"].max()
    assert maxp > points  # the draws' best, not the shrunk estimates' best
    grid = result.budget.draws[("m", "agnews", "zero_shot")][0]
    rows = [i for i, (m, _) in enumerate(grid.keys) if m == "generic"]
    assert maxp == pytest.approx(100 * np.median(grid.drawn[:, rows].max(axis=1)))

    validated(lambda statistic, design, budget: statistic != "maxp")
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=0, estimate_draws=100)
    assert math.isnan(result.tables["maxp_zero_shot"].frame.loc["generic", "agnews"])
    assert any("MaxP not resolved at --budget 0.25" in str(i) for i in result.issues)


def test_the_cards_terminal_line_says_not_resolved_instead_of_n_a(tmp_path, validated):
    validated(lambda statistic, design, budget: False)
    rng = np.random.default_rng(12)
    grid = _grid(rng, [0.0, -1.0, 0.5, 1.0], 100)
    _write_grid(tmp_path, "m", "hellaswag", grid, _mask(rng, grid.shape, 0.1), fraction=0.1)
    out, _ = _effects(tmp_path, n_power=0)
    line = out.cards[0].summary_line()
    assert "AvgP, MinP, MaxP not resolved across 4 instructions" in line and "n/a" not in line


def test_unresolved_per_class_rows_still_show_the_stock_rows_exact_accuracies(tmp_path, validated):
    validated(lambda statistic, design, budget: False)
    rng = np.random.default_rng(13)
    labels = ["0", "1"] * 50
    grid = _grid(rng, [0.0, -1.0, 0.5, 1.0], 100)
    _write_grid(tmp_path, "m", "boolq", grid, _mask(rng, grid.shape, 0.2), fraction=0.2, labels=labels)
    out, _ = _effects(tmp_path, n_power=0)
    classes = out.classes.set_index(["instruction", "class"])
    ones = np.array([label == "1" for label in labels])
    assert classes.loc[("null", "1"), "accuracy"] == pytest.approx(grid[0, ones].mean())
    assert math.isnan(classes.loc[("generic-1", "1"), "accuracy"]) and classes.loc[("generic-1", "1"), "not_resolved"]


def _records(n_items: int, fraction: float, floor: int, extend: float | None = None) -> list[dict]:
    """Budget records of 8 instructions as the runner deals them: the larger of the share asked for and the floor."""
    share = extend if extend is not None else fraction
    items = list(range(min(n_items, max(floor, round(share * n_items)))))
    return [{"fraction": fraction, **({"extend": extend} if extend is not None else {}), "items": items,
             "n_items": n_items} for _ in range(8)]


@pytest.mark.parametrize("resolved_from, ends", [(0.25, "resolved"), (0.5, "full grid")])
def test_following_the_budget_advice_adds_cells_until_it_resolves_or_names_the_full_grid(resolved_from, ends):
    """The advice is judged on the cells dealt: a floor that already dealt 25% is not told to extend to 5%."""
    from instructeval_aggregation.budget_validity import table_of
    from instructeval_aggregation.harness_budget import design_of, resolve

    table = table_of(lambda s, d, b: b >= resolved_from, ["max"])["resolved"]
    n_items, fraction, extend, steps = 440, 0.02, None, []
    for _ in range(5):
        design = design_of(_records(n_items, fraction, 10, extend))
        verdict = resolve("max", design, n_items, table=table)
        steps.append((design[1], verdict.why))
        if verdict.resolved or "evaluate the full grid" in (verdict.why or ""):
            break
        advised = float(re.search(r"--budget-extend ([0-9.]+)", verdict.why).group(1))
        assert advised > design[1]  # the advice adds cells to those dealt
        extend = advised
    final = resolve("max", design, n_items, table=table)
    assert (final.resolved if ends == "resolved" else "evaluate the full grid (no --budget)" in final.why), steps
    assert len(steps) <= 3


def test_a_floor_that_dealt_more_than_the_budget_is_judged_on_what_it_dealt():
    from instructeval_aggregation.budget_validity import table_of
    from instructeval_aggregation.harness_budget import design_of, resolve

    table = table_of(lambda s, d, b: b >= 0.25, ["max"])["resolved"]
    design = design_of(_records(40, 0.02, 10))  # 10 items of 40 each: 25% dealt at --budget 0.02
    assert design == ("uniform", 0.25, 0.02) and resolve("max", design, 40, table=table).resolved
    table = table_of(lambda s, d, b: False, ["max"])["resolved"]
    assert resolve("max", design, 40, table=table).why == (
        "not resolved at --budget 0.02 (25.0% of the cells dealt): no validated budget of the uniform design (up to "
        "0.25) resolves it; evaluate the full grid (no --budget)")
