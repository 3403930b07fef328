"""The verdict: the stock score with its SE, the instruction effect and a word (sensitive, robust,
not resolved) per grid, first in the terminal and the HTML report; the model pairs' flips next to
the flips item noise alone causes."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from instructeval_aggregation.verdict import (NOT_RESOLVED, ROBUST, SENSITIVE, harness_verdicts, item_flip_probability,
                                              stock_se)

sys.path.insert(0, str(Path(__file__).parent))
from test_budget_statistics import _effects, _grid, _mask, _write_grid  # noqa: E402


def _null_grid(rng: np.random.Generator, instructions: int, items: int, item_sd: float = 2.5) -> np.ndarray:
    """No instruction matters: each item's chance of a right answer is the same under every instruction."""
    logits = np.repeat(rng.normal(0.0, item_sd, items)[None, :], instructions, axis=0)
    return (rng.random(logits.shape) < 1 / (1 + np.exp(-logits))).astype(float)


def _verdict(folder: Path, n_power: int = 20):
    out, _ = _effects(folder, n_power=n_power)
    verdicts, pairs = harness_verdicts(out, level=0.95, n_boot=400, seed="t")
    return out, verdicts, pairs


def test_a_clearly_sensitive_grid_is_sensitive_with_its_best_and_worst_instruction(tmp_path):
    grid = _grid(np.random.default_rng(1), [0.0, -1.5, 1.5, -0.5, 0.5, 1.0], 150)
    _write_grid(tmp_path, "m", "boolq", grid)
    _, (v,), _ = _verdict(tmp_path)
    assert v.word == SENSITIVE and v.p_value <= 0.05
    assert v.stock == pytest.approx(grid[0].mean())
    assert v.stock_se == pytest.approx(100 * grid[0].std(ddof=1) / np.sqrt(150))
    scores = grid[1:].mean(axis=1)
    assert v.best.name == f"generic-{1 + int(np.argmax(scores))}" and v.best.score == pytest.approx(scores.max())
    assert v.worst.name == f"generic-{1 + int(np.argmin(scores))}"
    assert v.best.low < v.best.score < v.best.high
    line = v.line()
    assert line.startswith(f"m boolq [description, 0-shot]: stock {100 * grid[0].mean():.1f} ± {v.stock_se:.1f}; sensitive (p = ")
    assert f"best {v.best.name} {100 * scores.max():.1f} [" in line


def test_no_effect_is_robust_only_where_the_design_detects_effects_the_size_of_the_stock_se(tmp_path):
    rng = np.random.default_rng(3)
    _write_grid(tmp_path, "many", "boolq", _null_grid(rng, 24, 200))  # many instructions: a sensitive design
    _write_grid(tmp_path, "few", "boolq", _null_grid(rng, 4, 200))  # 3 instructions against the stock one
    _, verdicts, _ = _verdict(tmp_path)
    by = {v.model: v for v in verdicts}
    assert by["many"].p_value > 0.05 and by["few"].p_value > 0.05
    assert by["many"].word == ROBUST and by["many"].detectable_sd <= by["many"].stock_se
    assert by["few"].word == NOT_RESOLVED and by["few"].detectable_sd > by["few"].stock_se
    assert "robust (p = " in by["many"].line() and "would have been detected (80% power), no more than the stock SE" in by["many"].line()
    assert "only an SD of" in by["few"].line()
    # what to run: more instructions on as many rows, where the F approximation detects an SD within the stock SE
    p = by["few"].projection
    assert p is not None and p.instructions > 4 and p.rows >= 200 and p.detectable_sd <= p.stock_se
    assert (f"resolving needs about {p.instructions} instructions x {p.rows} rows: there an SD "
                                     f"of {p.detectable_sd:.1f} points is detected (80% power), no more than the stock "
                                     f"SE {p.stock_se:.1f}; best ") in by["few"].line()
    assert by["many"].projection is None or "resolving needs" not in by["many"].line()


def test_a_budget_the_validation_does_not_resolve_is_not_resolved_without_an_effect(tmp_path, validated):
    validated(lambda statistic, design, budget: False)
    rng = np.random.default_rng(4)
    grid = _null_grid(rng, 12, 100)
    _write_grid(tmp_path, "m", "boolq", grid, _mask(rng, grid.shape, 0.3))
    _, (v,), _ = _verdict(tmp_path)
    assert v.p_value > 0.05 and v.abstained
    assert v.word == NOT_RESOLVED
    assert v.best.why and v.worst.why and "; best and worst instruction not resolved" in v.line()


def test_item_resampling_flips_apart_models_rarely_and_tied_models_often():
    rng = np.random.default_rng(0)
    strong, weak = (rng.random(300) < 0.8).astype(float), (rng.random(300) < 0.4).astype(float)
    a, b = (rng.random(300) < 0.5).astype(float), (rng.random(300) < 0.5).astype(float)
    assert item_flip_probability(strong, weak, n_boot=500, rng=np.random.default_rng(1)) < 0.01
    assert 0.2 < item_flip_probability(a, b, n_boot=500, rng=np.random.default_rng(1)) <= 0.5
    y = np.array([1.0, 0.0] * 6)
    assert stock_se(y) == pytest.approx(100 * np.std(y, ddof=1) / np.sqrt(12))
    assert math.isnan(stock_se(np.ones(9)))  # too few rows for an SE: not a certain score


def test_pairs_carry_both_flip_probabilities(tmp_path):
    rng = np.random.default_rng(5)

    def scored(right: int) -> np.ndarray:  # 4 instructions, each right on ``right`` of 120 items, at random
        return np.vstack([rng.permutation(np.r_[np.ones(right), np.zeros(120 - right)]) for _ in range(4)])

    _write_grid(tmp_path, "strong", "boolq", scored(100))
    _write_grid(tmp_path, "weak", "boolq", scored(40))
    _write_grid(tmp_path, "tie", "boolq", scored(39))  # one item behind: as often ahead as behind on other items
    _, _, pairs = _verdict(tmp_path, n_power=0)
    by = {(p.higher, p.lower): p for p in pairs}
    apart = by[("strong", "weak")]
    assert apart.item_flip < 0.01 and apart.flip == 0.0
    close = by[("weak", "tie")]
    assert 0.3 < close.item_flip <= 0.5
    assert "from resampling items alone 0.00" in apart.line()


def test_the_terminal_and_the_report_open_with_the_verdicts(tmp_path):
    rng = np.random.default_rng(6)
    _write_grid(tmp_path / "runs", "m1", "boolq", _grid(rng, [0.0, -1.5, 1.5, 0.5], 80))
    _write_grid(tmp_path / "runs", "m2", "boolq", _grid(rng, [-0.5, -1.0, 1.0, 0.0], 80))
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "instructeval_aggregation", str(tmp_path / "runs"), "--out", str(out),
                           "--bootstrap", "50", "--no-plots"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("m1 boolq [description, 0-shot]: stock ") and "; sensitive (p = " in lines[0]
    assert lines[1].startswith("m2 boolq [description, 0-shot]: stock ")
    assert lines[2].startswith("boolq [description, 0-shot]: m") and "from resampling items alone" in lines[2]
    page = (out / "report.html").read_text()
    first = page.index("<h2>")
    assert page[first:].startswith("<h2>Verdict</h2>")
    assert page.index("m1 boolq [description, 0-shot]</b>") < page.index("<h2>Overview</h2>") < page.index(
        "Instructions on the harness")
    for empty in ("Confidence intervals", "<h2>Models</h2>", "<h2>Runs and their protocol</h2>", "<h2>Definitions</h2>"):
        assert empty not in page  # nothing to show on a harness-only run: left out
    card = json.loads((out / "sensitivity" / "card.json").read_text())["cards"][0]
    assert card["verdict"]["verdict"] == "sensitive" and card["verdict"]["line"] == lines[0]
    assert (out / "data" / "verdicts.csv").read_text().splitlines()[0].startswith("model,task,placement,num_fewshot,setting,verdict")
    import pandas as pd

    pairs = pd.read_csv(out / "data" / "verdict_pairs.csv", keep_default_na=False)
    assert pairs["line"].tolist() == [lines[2]]  # the line as printed, not rebuilt from rounded columns


def test_docstring_examples():
    import doctest

    from instructeval_aggregation import verdict

    assert doctest.testmod(verdict).failed == 0


def test_a_one_model_nine_task_report_opens_with_its_verdict(tmp_path):
    from instructeval_aggregation.testing import SyntheticVariant, write_run

    rng = np.random.default_rng(7)
    chance = {("null", "null"): 0.5, ("generic", "generic-0"): 0.5, ("generic", "generic-1"): 0.9,
              ("adhoc", "adhoc-agnews-00"): 0.15, ("adhoc", "adhoc-agnews-01"): 0.5}
    grid = {key: (rng.random(120) < p).astype(int).tolist() for key, p in chance.items()}
    gold = [str(j % 4) for j in range(120)]  # four balanced labels: chance is 25%
    write_run(tmp_path / "runs", "tiny", [SyntheticVariant("agnews", m, i, "zero_shot", correct=c, targets=gold)
                                          for (m, i), c in grid.items()])
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "instructeval_aggregation", str(tmp_path / "runs"), "--out", str(out),
                           "--bootstrap", "50", "--no-plots"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    null = np.mean(grid[("null", "null")])
    assert first.startswith(f"tiny agnews [zero-shot]: null {100 * null:.1f} ± {stock_se(np.array(grid[('null', 'null')])):.1f}; "
                            "sensitive (p = ")
    best = np.mean(grid[("generic", "generic-1")])
    assert f"best generic-1 {100 * best:.1f} [" in first and "worst adhoc-agnews-00 " in first
    assert "best method generic " in first  # generic's mean over items beats null's and adhoc's
    page = (out / "report.html").read_text()
    assert page[page.index("<h2>"):].startswith("<h2>Verdict</h2>")
    assert page.index("tiny agnews [zero-shot]</b>") < page.index("Mean relative gain (paper Table 5)")
    assert "Task-type averages" not in page  # one task: the same column as the gain table
    card = json.loads((out / "sensitivity" / "card.json").read_text())["cards"][0]
    assert card["verdict"]["line"] == first and card["verdict"]["best_method"]["name"] == "generic"
    assert (out / "tables" / "verdicts.md").read_text() == f"# Verdict\n\n- {first}\n"


def test_a_budgeted_zero_shot_grid_is_tested_on_its_observed_cells(tmp_path):
    from test_aggregation_budget import INSTRUCTIONS, N_ITEMS, _budgeted_run

    from instructeval_aggregation.loading import load_runs
    from instructeval_aggregation.pipeline import aggregate
    from instructeval_aggregation.verdict import verdicts_of

    rng = np.random.default_rng(8)
    chance = [0.5, 0.05, 0.95, 0.05, 0.95, 0.05, 0.95]  # the null instruction, then instructions far apart
    y = (rng.random((len(INSTRUCTIONS), N_ITEMS)) < np.array(chance)[:, None]).astype(float)
    _budgeted_run(tmp_path / "runs", "m", y, fraction=0.5, targets=[str(j % 4) for j in range(N_ITEMS)])  # chance 25%
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=50, estimate_draws=50)
    (v,) = verdicts_of(result).nine
    assert v.chance.state == "above chance" and v.word == SENSITIVE and v.p_value <= 0.05
    assert v.best_method is not None and v.best_method.name in {"null", "generic"}
    assert v.line().startswith("m agnews [zero-shot]: null ")


def test_without_per_item_scores_the_verdict_is_not_resolved_and_says_why(tmp_path):
    from instructeval_aggregation.loading import load_runs
    from instructeval_aggregation.pipeline import aggregate
    from instructeval_aggregation.testing import SyntheticVariant, write_run
    from instructeval_aggregation.verdict import verdicts_of

    grid = {("null", "null"): [1, 0, 1, 0], ("generic", "generic-0"): [1, 1, 1, 0], ("generic", "generic-1"): [0, 0, 0, 0]}
    write_run(tmp_path / "runs", "tiny", [SyntheticVariant("agnews", m, i, "zero_shot", correct=c) for (m, i), c in grid.items()])
    result = aggregate(load_runs([str(tmp_path / "runs")], samples=False), n_boot=20, use_samples=False)
    (v,) = verdicts_of(result).nine
    assert v.word == NOT_RESOLVED
    assert v.line() == ("tiny agnews [zero-shot]: null 50.0; not resolved (no per-item scores): no instruction SD; "
                        "best generic-0 75.0, worst generic-1 0.0, best method null 50.0")


# ------------------------------------------------------------------ Natural Instructions (graded scores)

def test_ni_verdict_of_a_grid_where_no_instruction_changes_an_answer_is_robust_with_its_power():
    """Every instruction gives each instance the same ROUGE-L: p = 1, the shift power detects an SD far
    below the standard score's SE (the instances' scores spread over [0, 1]), so the verdict is robust."""
    from instructeval_aggregation.ni_verdict import ni_verdict

    row = np.random.default_rng(4).random(60)
    Y = np.vstack([row] * 5)
    v = ni_verdict("m", "t", ["null", "definition", "definition_pos2", "pos2", "full"], Y, level=0.95, seed="s",
                   n_perm=99, n_power=20)
    assert v.p_value == 1.0 and v.stock == pytest.approx(row.mean())
    assert v.detectable_sd < v.stock_se and v.word == "robust"
    assert "an SD of" in v.line() and "no more than the definition_pos2 SE" in v.line()


def test_ni_verdict_finds_a_header_that_moves_every_instance():
    from instructeval_aggregation.ni_verdict import ni_verdict

    rng = np.random.default_rng(5)
    base = rng.random(40) * 0.5
    Y = np.vstack([base, base + 0.4, base + 0.2 + rng.normal(0, 0.02, 40)])
    v = ni_verdict("m", "t", ["null", "definition_pos2", "definition"], Y, level=0.95, seed="s", n_perm=199, n_power=0)
    assert v.word == "sensitive" and v.p_value <= 0.01
    assert v.best.name == "definition" and v.worst.name == "null"  # the standard one is the stock, not a pick


def test_detectable_shift_sd_grows_with_the_items_noise():
    """More noise within items needs a larger shift to be seen: the detectable SD of a noisy grid is
    larger than that of a quiet one with the same instances' spread."""
    from instructeval_aggregation.instruction_test import detectable_shift_sd

    rng = np.random.default_rng(6)
    base = rng.random(50)
    quiet = np.clip(base + rng.normal(0, 0.02, (6, 50)), 0, 1)
    noisy = np.clip(base + rng.normal(0, 0.25, (6, 50)), 0, 1)
    q = detectable_shift_sd(quiet, n_sim=20, rng=np.random.default_rng(1)).detectable_sd
    n = detectable_shift_sd(noisy, n_sim=20, rng=np.random.default_rng(1)).detectable_sd
    assert q is not None and n is not None and q < n


def _label_shift_grid(rng: np.random.Generator, items: int, pull: float) -> tuple[np.ndarray, list[str]]:
    """Half the items' gold answer is "yes", half "no"; instruction i pulls every answer toward "yes"
    by ``+-pull`` logits (alternating sign), which raises its accuracy on "yes" items as much as it lowers
    it on "no" items: the answers move between labels, the accuracy does not."""
    labels = ["yes", "no"] * (items // 2)
    sign = np.array([1.0 if t == "yes" else -1.0 for t in labels])
    base = rng.normal(0.5, 1.0, items)
    pulls = np.array([0.0] + [pull * (-1) ** i for i in range(1, 12)])
    logits = base[None, :] + pulls[:, None] * sign[None, :]
    return (rng.random(logits.shape) < 1 / (1 + np.exp(-logits))).astype(float), labels


def test_answers_that_move_between_labels_without_moving_the_score_are_their_own_clause_not_sensitive(tmp_path):
    grid, labels = _label_shift_grid(np.random.default_rng(5), 300, 1.5)
    _write_grid(tmp_path, "m", "boolq", grid, labels=labels)
    out, (v,), _ = _verdict(tmp_path)
    assert v.class_p <= 0.05  # the per-gold-answer test sees the shift
    assert v.p_value > 0.05 and v.word != SENSITIVE  # the score test does not: the score does not move
    assert out.effects.iloc[0]["class_shift_p"] == v.class_p and out.effects.iloc[0]["permutation_p"] == v.p_value
    assert f"answers shift between gold labels (p = {v.class_p:.3f}" in v.line()


def test_a_score_that_moves_above_chance_is_sensitive(tmp_path):
    rng = np.random.default_rng(6)
    grid = _grid(rng, [0.0, -1.5, 1.5, -0.5, 0.5, 1.0], 200, level=2.0)
    labels = ["yes", "no"] * 100
    _write_grid(tmp_path / "a", "m", "boolq", grid, labels=labels)
    _, (v,), _ = _verdict(tmp_path / "a")
    assert v.chance.state == "above chance" and v.word == SENSITIVE and v.p_value <= 0.05


def test_a_model_that_answers_one_label_everywhere_reads_at_chance_with_what_it_does(tmp_path):
    rng = np.random.default_rng(7)
    labels = ["yes", "no"] * 20
    said_no = np.array([1.0 if t == "no" else 0.0 for t in labels])
    grid = np.vstack([said_no] + [said_no if i % 2 else (rng.random(40) < 0.5).astype(float) for i in range(1, 5)])
    _write_grid(tmp_path, "m", "boolq", grid, labels=labels)
    out, (v,), _ = _verdict(tmp_path)
    assert v.word == "at chance" and v.chance.rate == 0.5 and v.chance.p_value > 0.01
    line = v.line()
    assert line.startswith("m boolq [description, 0-shot]: stock 50.0 ± 8.0; at chance: answers \"no\" on 40 of 40 rows; "
                           "always answering \"no\" scores 50.0 on these rows (binomial p = ")
    assert "the instructions' effect on it: " in line and "sensitive (p" not in line.split("the instructions'")[0]
    row = out.effects.iloc[0]
    assert row["chance_state"] == "at chance" and row["chance"] == 0.5


def test_a_model_clearly_above_the_majority_answer_is_not_at_chance(tmp_path):
    labels = ["yes", "no"] * 50
    rng = np.random.default_rng(8)
    right = (rng.random((4, 100)) < 0.85).astype(float)
    _write_grid(tmp_path, "m", "boolq", right, labels=labels)
    _, (v,), _ = _verdict(tmp_path)
    assert v.chance.state == "above chance" and v.word in (SENSITIVE, ROBUST, NOT_RESOLVED)
    assert "at chance" not in v.line()


def test_a_generation_task_has_a_floor_not_a_chance_rate(tmp_path):
    grid = np.zeros((4, 60))
    grid[:, :3] = 1.0  # 5% right under every instruction
    _write_grid(tmp_path, "m", "gsm8k", grid)  # no labels: not multiple choice
    _, (v,), _ = _verdict(tmp_path)
    assert v.word == "at a floor" and v.line().split("; ")[1].startswith("at a floor: 5.0 (below 10")


def test_a_budget_whose_max_is_not_resolved_names_no_best_instruction(tmp_path, validated):
    validated(lambda statistic, design, budget: statistic not in ("max", "min"))  # scores resolved, extremes not
    rng = np.random.default_rng(4)
    grid = _grid(rng, [0.0, -1.0, -0.5, 0.0, 0.5, 1.0, 0.2, -0.2], 150, level=1.0)
    _write_grid(tmp_path, "m", "boolq", grid, _mask(rng, grid.shape, 0.3))
    out, (v,), _ = _verdict(tmp_path)
    assert not out.scores["score"].drop(0).isna().all()  # each instruction's estimate is resolved
    line = v.line()
    assert ("best and worst instruction not resolved (the budget validation does not resolve max and min at this "
            "design and budget)") in line
    assert "best generic" not in line and "worst generic" not in line


def test_the_card_line_says_which_extremes_are_not_resolved():
    from instructeval_aggregation.sensitivity_card import Measure, SensitivityCard

    card = SensitivityCard("m", "t", "zero_shot", "acc", [("null", "null"), ("generic", "g1")], 10,
                           {"avgp": Measure(50.0), "minp": Measure(None, why="not resolved at --budget 0.1"),
                            "maxp": Measure(None, why="not resolved at --budget 0.1")}, {})
    assert "50.0 (MinP and MaxP not resolved) across 2 instructions" in card.summary_line()
    card.measures["minp"] = Measure(40.0)
    assert "50.0 (MinP 40.0, MaxP not resolved) across 2 instructions" in card.summary_line()


def test_the_projection_costs_the_design_at_the_runs_measured_rate(tmp_path):
    rng = np.random.default_rng(3)
    _write_grid(tmp_path, "few", "boolq", _null_grid(rng, 4, 200))
    for path in (tmp_path / "few").rglob("results_*.json"):
        data = json.loads(path.read_text())
        data["total_evaluation_time_seconds"] = str(2.0 * len(data["results"]))  # 2 s per variant: 0.01 s per cell
        path.write_text(json.dumps(data))
    _, (v,), _ = _verdict(tmp_path)
    p = v.projection
    assert p.seconds == pytest.approx(p.instructions * p.rows * 0.01)
    assert f"rows (about {p.seconds / 60:.0f} minutes at this run's measured rate)" in v.line()


def test_a_grid_of_the_stock_instruction_alone_says_so_and_keeps_its_se(tmp_path):
    rng = np.random.default_rng(9)
    grid = (rng.random((1, 80)) < 0.7).astype(float)
    _write_grid(tmp_path, "m", "boolq", grid, labels=["yes", "no"] * 40)
    _, (v,), _ = _verdict(tmp_path)
    assert v.stock_se == pytest.approx(stock_se(grid[0]))
    assert "not resolved (one instruction (null): nothing to compare; add instructions" in v.line()
    assert "no per-item scores" not in v.line()


def test_a_nine_task_folder_with_the_null_variant_alone_says_so_and_keeps_its_se(tmp_path):
    from instructeval_aggregation.testing import SyntheticVariant, write_run
    from instructeval_aggregation.loading import load_runs
    from instructeval_aggregation.pipeline import aggregate

    y = (np.random.default_rng(10).random(60) < 0.6).astype(int).tolist()
    write_run(tmp_path / "runs", "m", [SyntheticVariant("agnews", "null", "null", "zero_shot", correct=y,
                                                         targets=[str(j % 4) for j in range(60)])])
    from instructeval_aggregation.verdict import verdicts_of

    (v,) = verdicts_of(aggregate(load_runs([tmp_path / "runs"]), n_boot=20)).nine
    assert v.stock_se == pytest.approx(stock_se(np.array(y, dtype=float)))
    assert "(one instruction (null): nothing to compare" in v.line()


def test_an_ni_card_on_a_handful_of_instances_prints_no_interval():
    from instructeval_aggregation.ni_verdict import ni_card

    Y = np.array([[1.0] * 5, [0.0] * 5])
    card = ni_card("m", "ni_task190_snli_classification", ["definition_pos2", "null"], Y, n_boot=100, level=0.95, seed="s")
    assert all(m.ci_low is None for m in card.measures.values()) and card.notes == ["only 5 instances: no intervals (they need 10)"]
