"""The budget benchmark's references, ``known-b`` (item effects known exactly) and ``simulated``
(grids redrawn from the full grid's fit), and its verdict helpers."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from budget_validation import (Scores, allocation_gain, coverage_misses, known_items_estimate, reach_lines,  # noqa: E402
                               score_estimates, simulated_grid)


def test_every_cell_observed_gives_the_exact_accuracies():
    rng = np.random.default_rng(0)
    y = (rng.random((6, 20)) < 0.6).astype(float)
    assert np.allclose(known_items_estimate(y, [list(range(20))] * 6), y.mean(axis=1))


def test_a_grid_without_interactions_is_recovered_from_any_cells():
    # y_ij = d_j + r_i exactly (no instruction x item interaction): the unseen cells are known
    d = np.linspace(0.2, 0.6, 10)
    r = np.array([-0.1, 0.0, 0.15, 0.3])
    y = d[None, :] + r[None, :].T
    y = y - y.mean(axis=0) + d  # item means over instructions equal d, as the estimator takes them
    chosen = [[0, 3], [1, 2, 9], [5], [4, 8]]
    assert np.allclose(known_items_estimate(y, chosen), y.mean(axis=1))


def test_an_interaction_in_unseen_cells_is_its_error():
    y = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])  # pure interaction: every item mean is 0.5
    est = known_items_estimate(y, [[0], [0]])  # each instruction seen on item 0 only
    assert np.allclose(est, [(1 + 3 * 1.0) / 4, (0 + 3 * 0.0) / 4])  # shifted by the one residual: off by 0.5
    assert np.allclose(np.abs(est - y.mean(axis=1)), 0.5)


def test_coverage_misses_name_each_grid_and_interval_outside_90_to_97_percent():
    def scores(instr, method, quant):
        return Scores(1.0, 0.5, 0.5, 0.5, 1.0, instr, method, quant, 0.1)

    results = {(0.1, "uniform", "a", "model"): [scores(0.88, 0.95, 0.80), scores(0.88, 0.95, 0.92)],
               (0.1, "uniform", "b", "model"): [scores(0.95, 0.97, 0.90)],
               (0.1, "uniform", "c", "model"): [scores(1.0, 0.9, 0.95)]}
    assert coverage_misses(results, ["a", "b", "c", "d"]) == ["a instructions 88.0%, quantiles 86.0%", "c instructions 100.0%"]


def test_errors_and_coverages_leave_out_the_fully_evaluated_methods():
    truth = np.array([0.5, 0.6, 0.7, 0.8])  # null (exact: every item evaluated), three generic instructions
    values = np.array([0.5, 0.6, 0.7, 0.9])
    method_of = np.array([0, 1, 1, 1])
    draws = np.tile(values, (40, 1))  # intervals of width 0: the null one covers, the 0.9 one misses
    s = score_estimates(values, np.quantile(values, [0.05, 0.25, 0.5, 0.75, 0.95]), truth, method_of, [1],
                        share=0.5, draws=draws)
    assert np.isclose(s.instr_mae, 10 / 3) and np.isclose(s.method_mae, 10 / 3)  # not 2.5 and 1.67 with null
    assert np.isclose(s.coverage, 2 / 3) and s.method_coverage == 0.0  # not 3/4 and 1/2
    everything = score_estimates(values, np.quantile(values, [0.05, 0.25, 0.5, 0.75, 0.95]), truth, method_of, [0, 1],
                                 share=0.5, draws=draws)
    assert np.isclose(everything.instr_mae, 2.5) and np.isclose(everything.method_coverage, 0.5)


def test_the_allocation_gain_is_one_when_every_item_varies_alike_and_grows_with_decided_items():
    rng = np.random.default_rng(0)
    even = (rng.random((40, 100)) < 0.5).astype(float)
    assert allocation_gain(even) == pytest.approx(1.0, abs=0.02)
    decided = even.copy()
    decided[:, :75] = 1.0  # three items in four answered right by every instruction
    assert allocation_gain(decided) == pytest.approx(4.0, rel=0.05)


def _grid(y: np.ndarray, methods: list[str], labels: list[str]) -> dict:
    return {"rows": [{"method": m, "instruction": str(i), "correct": [int(v) for v in row]}
                     for i, (m, row) in enumerate(zip(methods, y))],
            "labels": labels, "metric": "acc_per_token"}


def test_a_simulated_grid_keeps_the_grid_s_structure_and_redraws_its_outcomes_per_seed():
    rng = np.random.default_rng(3)
    labels = ["pos", "neg"] * 30
    # instruction i answers item j right with a probability set by its own bias toward "pos"
    bias = rng.normal(0, 1.5, size=24)
    item = rng.normal(0, 1, size=60)
    sign = np.array([1.0 if label == "pos" else -1.0 for label in labels])
    p = 1 / (1 + np.exp(-(bias[:, None] * sign[None, :] + item[None, :])))
    y = (rng.random(p.shape) < p).astype(float)
    grid = _grid(y, ["null"] + ["generic"] * 11 + ["adhoc"] * 12, labels)
    first, again, other = simulated_grid(grid, "t", 0), simulated_grid(grid, "t", 0), simulated_grid(grid, "t", 1)
    assert first == again and first != other  # seeded by (key, seed)
    assert [(r["method"], r["instruction"]) for r in first["rows"]] == [(r["method"], r["instruction"]) for r in grid["rows"]]
    assert first["labels"] == labels and first["metric"] == grid["metric"]
    redrawn = np.array([r["correct"] for r in first["rows"]], dtype=float)
    assert redrawn.shape == y.shape and set(np.unique(redrawn)) <= {0.0, 1.0}
    assert 0.02 < np.mean(redrawn != y) < 0.5  # outcomes redrawn, not copied

    def class_gap(m: np.ndarray) -> np.ndarray:
        return m[:, sign > 0].mean(axis=1) - m[:, sign < 0].mean(axis=1)

    # the fit keeps each instruction's label bias: its accuracies on the two classes move as the grid's
    assert np.corrcoef(class_gap(redrawn), class_gap(y))[0, 1] > 0.8


def test_reach_lines_say_whether_the_simulated_reference_misses_a_target_too():
    def scores(method, quant):
        return Scores(1.0, method, quant, 0.5, 1.0, 0.95, 0.95, 0.95, 0.1)

    results = {(0.1, "balanced", "a", "model"): [scores(1.4, 1.0), scores(1.2, 1.2)],
               (0.1, "balanced", "a", "simulated"): [scores(1.1, 0.5)],
               (0.1, "balanced", "b", "model"): [scores(0.5, 1.6)],
               (0.1, "balanced", "b", "simulated"): [scores(0.5, 1.0)],
               (0.1, "balanced", "c", "model"): [scores(0.5, 0.5)],
               (0.1, "balanced", "c", "simulated"): [scores(2.0, 2.0)],
               (0.1, "balanced", "d", "model"): [scores(3.0, 3.0)]}  # no reference run: nothing said
    assert reach_lines(results, ["a", "b", "c", "d"]) == [
        "a: method MAE 1.30 > 1.0; simulated 1.10: misses too, the cells cannot carry it where the model holds exactly",
        "b: quantile MAE 1.60 > 1.5; simulated 1.00: within it, the model's misfit to this grid costs the difference"]


def _label_leaning_grid(seed: int) -> dict:
    """13 instructions (null, 6 generic, 6 ad hoc), each leaning toward one of two labels, on 100
    items of which three quarters have label "a" (as BoolQ's are mostly "yes")."""
    from budget_validation import METRIC

    rng = np.random.default_rng(seed)
    labels = ["a"] * 75 + ["b"] * 25
    lean = [0.0] + [2.0, -2.0, 1.0, -1.0, 1.5, -1.5] * 2
    methods = ["null"] + ["generic"] * 6 + ["adhoc"] * 6
    side = np.where(np.array(labels) == "a", 1.0, -1.0)
    item = rng.normal(0, 1, 100)
    rows = [{"method": method, "instruction": str(i),
             "correct": [int(v) for v in rng.random(100) < 1 / (1 + np.exp(-(toward * side + item)))]}
            for i, (method, toward) in enumerate(zip(methods, lean))]
    return {"rows": rows, "labels": labels, "metric": METRIC}


def test_the_harness_path_s_class_effects_predict_a_label_leaning_instruction_s_unseen_items():
    from harness_budget_classes import grid_errors

    # the balanced design gives every instruction as many "a" items as "b" ones, so one effect per
    # instruction predicts its unseen items (three quarters "a") from a half-"b" average
    without, with_classes = ([grid_errors(_label_leaning_grid(seed), "t", 0.2, seed, "balanced", with_classes=flag)
                              for seed in range(3)] for flag in (False, True))
    assert np.mean([mae for mae, _ in with_classes]) < 0.5 * np.mean([mae for mae, _ in without])
    assert np.mean([sd for _, sd in with_classes]) < 0.5 * np.mean([sd for _, sd in without])


def test_the_extended_design_keeps_its_first_cells_and_ends_at_the_design_s_cells_of_the_larger_share():
    from budget_validation import choose_cells

    from instructeval_tasks.sweep.budget import Budget, dealt_cells

    rng = np.random.default_rng(4)
    methods = ["null"] + ["generic"] * 4 + ["adhoc"] * 12
    y = (rng.random((len(methods), 40)) < np.linspace(0.2, 0.9, 40)).astype(float)
    grid = _grid(y, methods, [str(j % 2) for j in range(40)])
    first = choose_cells(grid, "toy:zs", 0.1, 0, "balanced", min_items=1, full_methods=("null",))
    extended = choose_cells(grid, "toy:zs", 0.3, 0, "extended", min_items=1, full_methods=("null",))
    assert all(set(first[name]) <= set(extended[name]) for name in first)
    assert sum(map(len, extended.values())) == dealt_cells(methods, 40, Budget(0.3, min_items=1, design="balanced"))
    assert len(extended["null/0"]) == 40  # the full method stays on every item, frozen in the rounds


def _scored_grid(seed: int = 0, m: int = 9, n: int = 40) -> dict:
    """A cache grid whose rows' answers come from label scores kept beside them (``choice_scores``)."""
    rng = np.random.default_rng(seed)
    gold = np.arange(n) % 2
    z = rng.normal(0, 1, (n, 2))[None] + rng.normal(0, 1, (m, 1, 2)) + rng.normal(0, 0.3, (m, n, 2))
    counts = {" yes": 1, " no": 2}
    lls = z * np.array([1.0, 2.0])
    y = (z.argmax(-1) == gold[None]).astype(int)
    methods = ["null"] + ["generic"] * 4 + ["adhoc"] * 4
    return {"task": "boolq", "setting": "zero_shot", "metric": "acc_per_token", "labels": [str(g) for g in gold],
            "rows": [{"method": methods[i], "instruction": f"i{i}", "correct": "".join(map(str, y[i]))} for i in range(m)],
            "choice_scores": {"labels": list(counts), "token_counts": counts,
                              "lls": [" ".join(f"{x:.4f}" for x in lls[i].ravel()) for i in range(m)]}}


def test_a_grid_with_label_scores_is_estimated_from_them_with_the_crossed_model_beside():
    from budget_validation import evaluate_grid

    scores = evaluate_grid(_scored_grid(), 0.25, 0, 50, "boolq:zs", "balanced", min_items=1, full_methods=("null",))
    assert {"model", "item-resp", "subset", "known-b"} <= set(scores)
    assert scores["model"].instr_mae != scores["item-resp"].instr_mae  # two estimators, not one twice
    plain = {k: v for k, v in _scored_grid().items() if k != "choice_scores"}
    again = evaluate_grid(plain, 0.25, 0, 50, "boolq:zs", "balanced", min_items=1, full_methods=("null",))
    assert "item-resp" not in again and again["model"].instr_mae == pytest.approx(scores["item-resp"].instr_mae)


def test_label_scores_that_do_not_give_the_cache_s_answers_stop_the_benchmark():
    from budget_validation import evaluate_grid

    grid = _scored_grid()
    row = grid["rows"][1]
    row["correct"] = ("1" if row["correct"][0] == "0" else "0") + row["correct"][1:]
    grid["rows"][1] = row
    with pytest.raises(SystemExit, match="its choice_scores are not usable: the label scores give another answer"):
        for seed in range(4):  # until item 0 of instruction 1 is among the chosen cells
            evaluate_grid(grid, 0.5, seed, 10, "boolq:zs", "uniform", min_items=1, full_methods=("null",))


def test_coverage_misses_count_the_intervals_and_test_them_against_95_percent():
    def scores(method, quant):
        return Scores(1.0, 0.5, 0.5, 0.5, 1.0, 0.95, method, quant, 0.1, intervals=(40, 3, 5))

    # 10 seeds of 3 method means: 24 covered (two misses a seed); every quantile covered
    results = {(0.1, "uniform", "a", "model"): [scores(0.8, 1.0)] * 10}
    line, = coverage_misses(results, ["a"])
    assert line.startswith("a methods 80.0% (24 of 30, p 0.00"), line  # 24 of 30 is far below 95%
    p_all = float(line.split("50 of 50, p ")[1].rstrip(")"))
    assert 0.05 < p_all < 0.5  # all 50 covered happens under 95% (0.95 ** 50 = 0.08 of the time): no evidence
    one_seed = {(0.1, "uniform", "a", "model"): [scores(1.0, 1.0)]}  # 3 of 3: a miss of the 90-97% band, no evidence
    assert "3 of 3, p 1" in coverage_misses(one_seed, ["a"])[0]


def test_verdict_compares_with_the_subset_only_where_the_subset_was_run(capsys):
    from budget_validation import _verdicts

    def scores(method):
        return Scores(1.0, method, 0.5, 0.5, 1.0, 0.95, 0.95, 0.95, 0.1)

    alone = {(0.1, "adaptive", "a", "model"): [scores(0.4)]}
    _verdicts(alone, ["a"])
    assert "MET on every grid" in capsys.readouterr().out
    with_subset = {**alone, (0.1, "balanced", "a", "subset"): [scores(0.3)]}
    _verdicts(with_subset, ["a"])
    assert "a: method means worse than the subset's" in capsys.readouterr().out


def _fake_results() -> dict:
    """Two grids' scores at one budget and design, two seeds of the estimator, one of the subset."""
    def scores(instr, method):
        return Scores(instr, method, 0.5, 0.6, 1.0, 0.95, 1.0, 0.8, 0.118)

    return {(0.1, "adaptive", "agnews:zs", "model"): [scores(1.0, 0.4), scores(2.0, 0.6)],
            (0.1, "adaptive", "agnews:zs", "subset"): [scores(9.0, 3.0)],
            (0.1, "adaptive", "hellaswag:zs", "model"): [scores(3.0, 0.2)]}


SETTINGS = {"seeds": 2, "budgets": [0.1], "designs": ["adaptive"], "grids": ["agnews:zs", "hellaswag:zs"], "draws": 50,
            "min_items": 1, "full_methods": ["null"], "simulated": False, "caches": ["budget_grid_smollm2.json: ..."]}


def test_the_page_is_stamped_with_the_commit_and_the_command_and_holds_the_table():
    from budget_validation import COLUMNS, FULL_COMMAND, validation_page

    command = "python benchmarks/budget_validation.py --seeds 2 --write-page docs/validation/budget.md"
    page = validation_page(_fake_results(), settings=SETTINGS, command=command, stamp="abc1234 with uncommitted changes",
                           verdicts=["targets at 10% (adaptive design, the aggregation's estimates):", "  MET on every grid"],
                           seconds=12.0, date="2026-01-02")
    lines = page.splitlines()
    assert "Measured at commit `abc1234` with uncommitted changes on 2026-01-02, in 12 s, by" in lines
    assert lines[lines.index("```bash") + 1] == command
    header = "| " + " | ".join(COLUMNS) + " |"
    assert header == ("| budget | grid | design | estimator | instr | method | quant | rho | regret | cov i/m/q | share "
                      "| gain% | vsnull | cov g/n |") and header in lines
    rows = [line for line in lines[lines.index(header) + 2:] if line.startswith("| ")]
    assert rows == [  # each grid's estimators, then each estimator pooled over the grids (seeds averaged)
        "| 10% | agnews:zs | adaptive | model | 1.50 | 0.50 | 0.50 | 0.60 | 1.00 | 95%/100%/80% | 11.8% | nan | nan | -/- |",
        "| 10% | agnews:zs | adaptive | subset | 9.00 | 3.00 | 0.50 | 0.60 | 1.00 | 95%/100%/80% | 11.8% | nan | nan | -/- |",
        "| 10% | hellaswag:zs | adaptive | model | 3.00 | 0.20 | 0.50 | 0.60 | 1.00 | 95%/100%/80% | 11.8% | nan | nan | -/- |",
        "| 10% | all grids | adaptive | model | 2.00 | 0.40 | 0.50 | 0.60 | 1.00 | 95%/100%/80% | 11.8% | nan | nan | -/- |",
        "| 10% | all grids | adaptive | subset | 9.00 | 3.00 | 0.50 | 0.60 | 1.00 | 95%/100%/80% | 11.8% | nan | nan | -/- |"]
    assert "  MET on every grid" in lines[lines.index("## Targets"):]
    # smaller than the defaults: said so, with the command of the full table
    assert '!!! note "A reduced run"' in lines and f"    {FULL_COMMAND}" in lines
    full = validation_page(_fake_results(), settings=SETTINGS, command=command, stamp="abc1234", verdicts=[], full=True)
    assert "Measured at commit `abc1234` on " in full and "A reduced run" not in full


def test_only_a_run_covering_the_defaults_is_the_full_table():
    import argparse

    from budget_validation import DEFAULTS, _is_full_run

    def args(**changed):
        return argparse.Namespace(**{"cache": None, "grids": "", "seeds": DEFAULTS["seeds"], "draws": DEFAULTS["draws"],
                                     "simulated": True, **changed})

    budgets, designs = list(DEFAULTS["budgets"]), list(DEFAULTS["designs"])
    assert _is_full_run(args(), budgets, designs) and _is_full_run(args(seeds=30), budgets + [0.5], designs + ["extended"])
    assert not _is_full_run(args(seeds=1), budgets, designs)
    assert not _is_full_run(args(grids="agnews:zs"), budgets, designs)
    assert not _is_full_run(args(simulated=False), budgets, designs)
    assert not _is_full_run(args(), [0.1], designs) and not _is_full_run(args(), budgets, ["adaptive"])


def test_the_stamp_is_the_commit_and_says_when_tracked_files_differ_from_it(tmp_path, monkeypatch):
    import subprocess

    from budget_validation import UNKNOWN_COMMIT, git_stamp

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # no repository above tmp_path counts
    assert git_stamp(tmp_path) == UNKNOWN_COMMIT
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=repo,
                              check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (repo / "model.py").write_text("A = 1\n")
    git("add", "model.py")
    git("commit", "-q", "-m", "first")
    head = git("rev-parse", "--short", "HEAD")
    assert git_stamp(repo) == head
    (repo / "notes.txt").write_text("untracked\n")  # not part of the code measured
    assert git_stamp(repo) == head
    (repo / "model.py").write_text("A = 2\n")
    assert git_stamp(repo) == f"{head} with uncommitted changes"
