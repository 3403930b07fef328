"""The aggregation of ``--harness-tasks`` results: the stock score among the instructions', the
instruction effect beyond item noise, the permutation test, rank stability across models."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from instructeval_aggregation.harness_effects import harness_effects, load_harness_results
from instructeval_aggregation.instruction_test import permutation_test
from instructeval_aggregation.issues import IssueLog
from instructeval_aggregation.sensitivity_measures import instruction_effect_sd
from instructeval_aggregation.testing import HARNESS_STAMP as STAMP, write_harness_run as _write

def test_permutation_test_finds_a_real_effect_and_not_a_null_one():
    rng = np.random.default_rng(0)
    items = 60
    null_grid = (rng.random((6, items)) < 0.5).astype(float)
    strong = np.vstack([(rng.random(items) < p).astype(float) for p in (0.2, 0.3, 0.5, 0.6, 0.8, 0.9)])
    assert permutation_test(strong, n_perm=200, seed="s").p_value < 0.01
    assert permutation_test(null_grid, n_perm=200, seed="s").p_value > 0.05
    assert permutation_test(strong, n_perm=200, seed="s").p_value == permutation_test(strong, n_perm=200, seed="s").p_value


def test_effects_by_hand(tmp_path):
    # stock (null) 4/8; instructions 2/8, 5/8, 6/8: min 25, median 62.5, max 75; stock pct 1 of 3 below -> 33.3
    _write(tmp_path, "m1", "boolq", {
        "null": [1, 1, 1, 1, 0, 0, 0, 0],
        "generic-0": [1, 1, 0, 0, 0, 0, 0, 0],
        "generic-1": [1, 1, 1, 1, 1, 0, 0, 0],
        "generic-2": [1, 1, 1, 1, 1, 1, 0, 0],
    })
    issues = IssueLog()
    results = load_harness_results([str(tmp_path)], issues)
    assert sorted(r.instruction_id for r in results) == ["generic-0", "generic-1", "generic-2", "null"]
    effects = harness_effects(results, issues, n_boot=100, level=0.95, seed="x", n_perm=99)
    row = effects.effects.iloc[0].to_dict()
    assert (row["stock"], row["min"], row["median"], row["max"]) == pytest.approx((0.5, 0.25, 0.625, 0.75))
    assert row["stock_percentile"] == pytest.approx(100 / 3)
    Y = np.array([[1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1, 0, 0]], float)
    assert row["instruction_sd"] == pytest.approx(100 * instruction_effect_sd(Y))
    assert row["instruction_sd_low"] <= row["instruction_sd"] <= row["instruction_sd_high"]
    assert 0 < row["permutation_p"] <= 1
    card = effects.cards[0]
    assert card.placement == "description" and card.setting == "zero_shot"


def test_rank_stability_across_models(tmp_path):
    # stock: m1 6/8 > m2 4/8; under generic-0 m2 wins (flip), under generic-1 m1 still wins
    _write(tmp_path, "m1", "hellaswag", {"null": [1] * 6 + [0] * 2, "generic-0": [1] * 3 + [0] * 5, "generic-1": [1] * 7 + [0]}, shot=10)
    _write(tmp_path, "m2", "hellaswag", {"null": [1] * 4 + [0] * 4, "generic-0": [1] * 5 + [0] * 3, "generic-1": [1] * 2 + [0] * 6}, shot=10)
    issues = IssueLog()
    effects = harness_effects(load_harness_results([str(tmp_path)], issues), issues, n_boot=200, level=0.95, seed="x", n_perm=99)
    rank = effects.rankings.iloc[0].to_dict()
    assert rank["stock_ranking"] == "m1 > m2"
    assert rank["flip_probability_max"] == pytest.approx(0.5) and rank["most_flipped_pair"] == "m1 vs m2"
    assert rank["tau_min"] == pytest.approx(-1.0) and rank["tau_median"] == pytest.approx(0.0)
    assert rank["rank_ranges"] == "m1: 1-2; m2: 1-2"
    assert 0.0 <= rank["flip_probability_max_low"] <= 0.5 <= rank["flip_probability_max_high"] <= 1.0
    (pair,) = effects.pairs.to_dict("records")
    assert (pair["higher"], pair["lower"], pair["flip_probability"]) == ("m1", "m2", pytest.approx(0.5))
    assert pair["stock_gap"] == pytest.approx(0.25) and pair["n_instructions"] == 2


def test_cli_reports_harness_only_inputs(tmp_path):
    _write(tmp_path / "runs", "m1", "boolq", {"null": [1, 0, 1, 0, 1, 0], "generic-0": [1, 1, 1, 0, 1, 0]})
    _write(tmp_path / "runs", "m2", "boolq", {"null": [1, 1, 1, 0, 1, 0], "generic-0": [0, 0, 1, 0, 1, 0]})
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "instructeval_aggregation", str(tmp_path / "runs"), "--out", str(out),
                           "--bootstrap", "50", "--no-plots"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "m1 boolq [description] zero-shot: " in done.stdout
    assert "wrote the harness-task tables (tables/harness_effects.md), " in done.stdout  # not "wrote 0 tables"
    page = (out / "report.html").read_text()
    assert "Instructions on the harness&#x27;s own tasks" in page or "Instructions on the harness's own tasks" in page
    assert "0 model(s)" not in page and "own tasks: none in these results" in page  # no empty InstructEval lines
    assert (out / "tables" / "harness_effects.tex").read_text().startswith("\\begin{table}")
    assert (out / "data" / "harness_pair_flips.csv").read_text().splitlines()[1].startswith("boolq,description,0,m2,m1,")
    effects = (out / "data" / "harness_effects.csv").read_text().splitlines()
    assert len(effects) == 3 and effects[0].startswith("model,task,placement,num_fewshot,metric")
    doc = json.loads((out / "sensitivity" / "instructeval_sensitivity_m1.json").read_text())
    assert set(doc["instructeval_sensitivity"]) == {"boolq"}
    assert set(doc["instructeval_sensitivity"]["boolq"]) == {"description/zero_shot"}
    summary = json.loads((out / "summary.json").read_text())
    assert [r["model"] for r in summary["harness"]["effects"]] == ["m1", "m2"]
    assert not math.isnan(summary["harness"]["effects"][0]["instruction_sd"])


def test_tied_stock_scores_are_shown_as_ties(tmp_path):
    _write(tmp_path, "m1", "bbh_fewshot_navigate", {"null": [0, 0, 0, 0], "generic-0": [0, 0, 0, 0]}, shot=3, metric="exact_match")
    _write(tmp_path, "m2", "bbh_fewshot_navigate", {"null": [0, 0, 0, 0], "generic-0": [0, 0, 0, 0]}, shot=3, metric="exact_match")
    issues = IssueLog()
    effects = harness_effects(load_harness_results([str(tmp_path)], issues), issues, n_boot=50, level=0.95, seed="x", n_perm=19)
    rank = effects.rankings.iloc[0].to_dict()
    assert rank["stock_ranking"] == "m1 = m2" and effects.pairs.empty  # no stock-ordered pair to flip


# ------------------------------------------------------------------------------------------ budget


def _write_budgeted(folder: Path, model: str, task: str, grid: np.ndarray, keep: np.ndarray, *,
                    labels: list[str] | None = None, output_type: str | None = None) -> None:
    """A budgeted run's files: instruction i (row 0 = null) scored only on the items ``keep[i]``;
    ``labels[j]``: item j's gold ``target`` (default "0"), ``output_type`` the task config's."""
    out = folder / model
    out.mkdir(parents=True, exist_ok=True)
    ids = [10 + 3 * j for j in range(grid.shape[1])]  # eval rows, as test_ids records them
    results, configs = {}, {}
    for i in range(grid.shape[0]):
        iid = "null" if i == 0 else f"generic-{i}"
        name = f"{task}__{iid}"
        items = [int(j) for j in np.flatnonzero(keep[i])]
        results[name] = {"alias": name, "acc,none": float(grid[i, items].mean())}
        configs[name] = {"task": name, "metric_list": [{"metric": "acc"}], **({"output_type": output_type} if output_type else {}), "metadata": {
            "model_label": model, "budget": {"fraction": 0.3, "seed": 0, "items": items, "n_items": grid.shape[1]},
            "harness": {"task": task, "num_fewshot": 0, "method": "null" if i == 0 else "generic", "instruction_id": iid,
                        "instruction": "" if i == 0 else f"text {iid}", "placement": "description", "test_ids": ids}}}
        lines = [json.dumps({"doc_id": ids[j], "filter": "none", "acc": float(grid[i, j]), "target": labels[j] if labels else "0",
                             "filtered_resps": [["-1.0", "False"]]}) for j in items]
        (out / f"samples_{name}_{STAMP}.jsonl").write_text("\n".join(lines) + "\n")
    (out / f"results_harness__{task}.json").write_text(json.dumps({
        "results": results, "configs": configs, "config": {"model": "hf", "model_args": f"pretrained={model}"},
        "versions": {}, "n-shot": {}}))


def _synthetic_grid(rng: np.random.Generator, effects: list[float], items: int) -> np.ndarray:
    difficulty = rng.normal(0, 1.5, items)
    logits = np.asarray(effects)[:, None] + difficulty[None, :]
    return (rng.random(logits.shape) < 1 / (1 + np.exp(-logits))).astype(float)


def _budget_mask(rng: np.random.Generator, rows: int, items: int, share: float) -> np.ndarray:
    keep = rng.random((rows, items)) < share
    keep[0] = True  # the null instruction on every item
    return keep


def test_masked_permutation_test_finds_a_real_effect_and_not_a_null_one():
    rng = np.random.default_rng(1)
    strong = _synthetic_grid(rng, [-2, -1, 0, 0.5, 1, 2], 120)
    flat = _synthetic_grid(rng, [0] * 6, 120)
    keep = _budget_mask(rng, 6, 120, 0.35)
    assert permutation_test(np.where(keep, strong, np.nan), n_perm=300, seed="s").p_value < 0.01
    assert permutation_test(np.where(keep, flat, np.nan), n_perm=300, seed="s").p_value > 0.05
    # item difficulty alone does not reject: every instruction alike, items from always to never right
    easy_hard = np.tile(np.r_[np.ones(60), np.zeros(60)], (6, 1))
    assert permutation_test(np.where(keep, easy_hard, np.nan), n_perm=300, seed="s").p_value == 1.0


def test_a_budgeted_grid_is_estimated_not_read_off_its_cells(tmp_path, validated):
    rng = np.random.default_rng(7)
    effects = [0.0, -1.5, -0.8, 0.0, 0.6, 1.2, 1.8, -0.3]
    grid = _synthetic_grid(rng, effects, 150)
    keep = _budget_mask(rng, len(effects), 150, 0.3)
    _write_budgeted(tmp_path, "m1", "boolq", grid, keep)
    issues = IssueLog()
    results = load_harness_results([str(tmp_path)], issues)
    out = harness_effects(results, issues, n_boot=300, level=0.95, seed="s", n_perm=300)
    assert not issues.items, issues.items
    row = out.effects.iloc[0]
    full_sd = 100 * instruction_effect_sd(grid)  # what the full grid would say
    assert row["instruction_sd_low"] <= full_sd <= row["instruction_sd_high"]
    assert abs(row["instruction_sd"] - full_sd) < 3.0
    assert row["cells_share"] == pytest.approx(keep.mean())
    assert row["stock"] == grid[0].mean()  # the null row is every item: exact
    scores = out.scores.set_index("instruction")["score"]
    exact = grid.mean(axis=1)
    subset = np.array([grid[i, keep[i]].mean() for i in range(len(effects))])
    estimates = np.array([scores["null"]] + [scores[f"generic-{i}"] for i in range(1, len(effects))])
    assert np.abs(estimates - exact).mean() < np.abs(subset - exact).mean()  # better than the cells' own means
    assert row["permutation_p"] < 0.01
    card = out.cards[0]
    assert card.estimated and card.measures["instruction_sd"].value == row["instruction_sd"]
    # each estimate with its interval, and its difference to the stock score from the same draws
    by = out.scores.set_index("instruction")
    assert by.loc["null", "ci_low"] == by.loc["null", "ci_high"] == grid[0].mean()  # exact: every item scored
    assert not by.loc["null", "estimated"]
    others = [f"generic-{i}" for i in range(1, len(effects))]
    inside = [by.loc[k, "ci_low"] <= exact[i] <= by.loc[k, "ci_high"] for i, k in enumerate(others, start=1)]
    assert sum(inside) >= len(others) - 1
    for k in others:
        assert by.loc[k, "estimated"] and by.loc[k, "vs_stock"] == pytest.approx(by.loc[k, "score"] - grid[0].mean())
        assert by.loc[k, "vs_stock_low"] == pytest.approx(by.loc[k, "ci_low"] - grid[0].mean())  # the stock is exact
        assert (by.loc[k, "p_above_stock"] > 0.5) == (by.loc[k, "vs_stock"] > 0) or abs(by.loc[k, "vs_stock"]) < 0.01
    assert math.isnan(by.loc["null", "vs_stock_low"]) and math.isnan(by.loc["null", "p_above_stock"])


def test_a_multiple_choice_budgeted_grid_gives_each_gold_answer_its_own_instruction_effects(tmp_path, validated):
    # each instruction moves the model toward one answer and away from the other (as on SmolLM2's
    # BoolQ), and its cells hold more "yes" items than "no" ones (as an adaptive round's may): one
    # effect per instruction predicts its unseen "no" items from its "yes" ones
    n, bias = 160, np.array([0.0, 2.5, -2.5, 1.5, -1.5, 2.0, -2.0, 0.5])
    labels = ["1" if j % 2 else "0" for j in range(n)]
    towards_yes = np.where(np.array(labels) == "1", 1.0, -1.0)
    errors = {"multiple_choice": [], "generate_until": []}
    for seed in range(4):
        rng = np.random.default_rng(seed)
        logits = bias[:, None] * towards_yes[None, :] + rng.normal(0, 1.0, n)[None, :]
        grid = (rng.random(logits.shape) < 1 / (1 + np.exp(-logits))).astype(float)
        keep = rng.random(grid.shape) < np.where(towards_yes > 0, 0.2, 0.05)[None, :]
        keep[0] = True
        for output_type in errors:
            folder = tmp_path / f"{output_type}-{seed}"
            _write_budgeted(folder, "m1", "boolq", grid, keep, labels=labels, output_type=output_type)
            issues = IssueLog()
            out = harness_effects(load_harness_results([str(folder)], issues), issues, n_boot=20, level=0.95, seed="s",
                                  n_perm=20)
            assert not issues.items, issues.items
            assert out.effects.iloc[0]["item_classes"] == (2 if output_type == "multiple_choice" else 1)
            scores = out.scores.set_index("instruction")["score"]
            estimates = np.array([scores[f"generic-{i}"] for i in range(1, len(bias))])
            errors[output_type] += list(np.abs(estimates - grid.mean(axis=1)[1:]))
    # a generation task's answers are no classes: one effect per instruction, as before
    assert np.mean(errors["multiple_choice"]) < 0.6 * np.mean(errors["generate_until"]), errors


def test_a_multiple_choice_grid_with_a_row_without_gold_answer_says_it_uses_one_effect_per_instruction(tmp_path, validated):
    rng = np.random.default_rng(4)
    grid = _synthetic_grid(rng, [0.0, 1.0, -1.0, 0.5], 40)
    labels = ["0", "1"] * 20
    labels[7] = None  # a line without its target
    _write_budgeted(tmp_path, "m1", "boolq", grid, _budget_mask(rng, 4, 40, 0.5), labels=labels, output_type="multiple_choice")
    issues = IssueLog()
    out = harness_effects(load_harness_results([str(tmp_path)], issues), issues, n_boot=20, level=0.95, seed="s", n_perm=20)
    (warned,) = [i for i in issues.items if i.code == "harness-budget"]
    assert "gold answers of rows [31]" in warned.message and "one effect per instruction" in warned.message
    assert out.effects.iloc[0]["item_classes"] == 1 and not math.isnan(out.effects.iloc[0]["instruction_sd"])


def test_a_budgeted_grid_whose_samples_disagree_on_a_gold_answer_gets_no_estimates(tmp_path):
    rng = np.random.default_rng(5)
    grid = _synthetic_grid(rng, [0.0, 1.0, -1.0], 30)
    keep = _budget_mask(rng, 3, 30, 0.5)
    _write_budgeted(tmp_path, "m1", "boolq", grid, keep, labels=["0", "1"] * 15, output_type="multiple_choice")
    name = "boolq__generic-1"
    path = next((tmp_path / "m1").glob(f"samples_{name}_*.jsonl"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["target"] = "1" if rows[0]["target"] == "0" else "0"  # another data set's row
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    issues = IssueLog()
    out = harness_effects(load_harness_results([str(tmp_path)], issues), issues, n_boot=20, level=0.95, seed="s", n_perm=20)
    warned = [i for i in issues.items if i.code == "samples-docs"]
    assert warned and "samples of different data" in warned[0].message and name in warned[0].message
    assert math.isnan(out.effects.iloc[0]["instruction_sd"]) and math.isnan(out.effects.iloc[0]["item_classes"])


def test_a_budgeted_grid_without_samples_is_flagged(tmp_path):
    rng = np.random.default_rng(3)
    grid = _synthetic_grid(rng, [0.0, 1.0, -1.0], 40)
    _write_budgeted(tmp_path, "m1", "boolq", grid, _budget_mask(rng, 3, 40, 0.3))
    issues = IssueLog()
    out = harness_effects(load_harness_results([str(tmp_path)], issues, samples=False), issues, n_boot=50, level=0.95, seed="s")
    assert any(i.code == "harness-budget" for i in issues.items)
    assert math.isnan(out.effects.iloc[0]["instruction_sd"]) and math.isnan(out.effects.iloc[0]["cells_share"])
