"""Budgeted sweeps in the aggregation: the estimates and how reports mark them (the model: tests/test_item_response.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from instructeval_aggregation import aggregate, load_runs
from instructeval_aggregation.budgeted import estimate_budgeted
from instructeval_aggregation.issues import AggregationError
from instructeval_aggregation.report import write_report
from instructeval_aggregation.testing import SyntheticVariant, write_run
from instructeval_tasks.sweep.budget import Budget, assign_cells


# --------------------------------------------------------------------------- results files

N_ITEMS = 40
INSTRUCTIONS = [("null", "null")] + [("generic", f"generic-{k}") for k in range(6)]


def _truth(model_seed: int) -> np.ndarray:
    rng = np.random.default_rng(model_seed)
    p = np.clip(np.linspace(0.35, 0.8, len(INSTRUCTIONS))[:, None] + rng.normal(0, 0.25, N_ITEMS)[None, :], 0.02, 0.98)
    return (rng.random(p.shape) < p).astype(float)


def _budgeted_run(folder, model: str, y: np.ndarray, fraction: float = 0.25, design: str | None = None,
                  targets: list[str] | None = None, task: str = "agnews"):
    names = [f"instructeval_{task}__{iid}__zs" for _, iid in INSTRUCTIONS]
    labels = [j % 4 for j in range(N_ITEMS)]
    cells = assign_cells(names, labels, Budget(fraction, min_items=4), "agnews:zs")
    variants = []
    for i, ((method, iid), name) in enumerate(zip(INSTRUCTIONS, names)):
        items = cells[name]
        budget = {"fraction": fraction, "seed": 0, "min_items": 4, "grid": "agnews:zs", "items": items,
                  "n_items": N_ITEMS, "grid_cells": sum(map(len, cells.values())), "grid_size": N_ITEMS * len(names)}
        if design is not None:
            budget["design"] = design
        variants.append(SyntheticVariant(task, method, iid, "zero_shot", correct=list(y[i, items]), doc_ids=items,
                                         n_test=N_ITEMS, metadata={"budget": budget},
                                         targets=[targets[j] for j in items] if targets is not None else None))
    return write_run(folder, model, variants), variants


def _full_run(folder, model: str, y: np.ndarray):
    variants = [SyntheticVariant("agnews", method, iid, "zero_shot", correct=list(y[i])) for i, (method, iid) in enumerate(INSTRUCTIONS)]
    return write_run(folder, model, variants)


def test_aggregate_replaces_budgeted_values_by_estimates_and_marks_them(tmp_path):
    y_budget, y_full = _truth(10), _truth(11)
    _budgeted_run(tmp_path / "runs", "model-a", y_budget)
    _full_run(tmp_path / "runs", "model-b", y_full)
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=0, estimate_draws=50)
    assert result.budget is not None
    inst = result.instructions.set_index(["model", "instruction"])
    # the full grid keeps its exact numbers
    for i, (_, iid) in enumerate(INSTRUCTIONS):
        assert inst.loc[("model-b", iid), "zero_shot"] == pytest.approx(y_full[i].mean(), abs=1e-12)
    est = result.budget.instructions.set_index("instruction")
    for i, (_, iid) in enumerate(INSTRUCTIONS):
        assert inst.loc[("model-a", iid), "zero_shot"] == pytest.approx(est.loc[iid, "estimate"], abs=1e-12)
        assert est.loc[iid, "ci_low"] <= est.loc[iid, "estimate"] <= est.loc[iid, "ci_high"]
    assert set(inst.loc["model-a", "estimated"]) == {"zero_shot"} and set(inst.loc["model-b", "estimated"]) == {""}
    variants = result.variants.set_index(["model", "instruction"])
    assert variants.loc[("model-a", "generic-0"), "estimated"] and not variants.loc[("model-b", "generic-0"), "estimated"]
    grid = result.budget.grids.iloc[0]
    assert grid["observed_cells"] == sum(len(v) for v in [range(10)] * 7) and grid["n_items"] == N_ITEMS
    assert grid["design"] == "uniform"  # the records say no design: written before there were designs
    best = result.budget.best.iloc[0]
    assert best["instruction"] == est["estimate"].idxmax() and best["p_best"] == est.loc[best["instruction"], "p_best"]
    assert est["p_best"].sum() == pytest.approx(1.0)
    methods = result.budget.methods.set_index("method")
    assert methods.loc["generic", "estimate"] == pytest.approx(est.loc[[f"generic-{k}" for k in range(6)], "estimate"].mean())
    quantiles = result.budget.quantiles.set_index("quantile")
    assert (quantiles["ci_low"] <= quantiles["estimate"]).all() and (quantiles["estimate"] <= quantiles["ci_high"]).all()
    assert quantiles["estimate"].is_monotonic_increasing  # the draws' median quantiles
    without_draws = aggregate(load_runs([tmp_path / "runs"]), n_boot=0, estimate_draws=0).budget
    assert without_draws.quantiles.set_index("quantile").loc[0.5, "estimate"] == pytest.approx(np.median(est["estimate"]))
    assert result.tables["gain_zero_shot"].estimated == frozenset({"agnews"})

    out = tmp_path / "report"
    write_report(result, out)
    assert "| AG News (est.) |" in (out / "tables" / "gain_zero_shot.md").read_text()
    assert (out / "tables" / "gain_zero_shot.csv").read_text().splitlines()[-1] == "_estimated,true"
    assert "AG News (est.)" in (out / "tables" / "gain_zero_shot.tex").read_text()
    html = (out / "report.html").read_text()
    assert "<h2>Budgeted estimates</h2>" in html and "AG News (est.)" in html
    assert "70 of 280 cells observed (25.0%, uniform design)" in html
    assert "<code>--budget 0.1 --budget-extend 0.25</code>" in html  # how to narrow the intervals
    summary = json.loads((out / "summary.json").read_text())
    assert {r["instruction"] for r in summary["budget"]["instructions"]} == {iid for _, iid in INSTRUCTIONS}
    assert any(p.startswith("estimates_model-a__agnews-zs") for p in summary["plots"])
    assert (out / "data" / "budget_quantiles.csv").is_file()


def test_full_grids_alone_show_no_estimate_marks(tmp_path):
    _full_run(tmp_path / "runs", "model-b", _truth(11))
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=0)
    assert result.budget is None and not any(t.estimated for t in result.tables.values())
    write_report(result, tmp_path / "report")
    assert "(est.)" not in (tmp_path / "report" / "report.html").read_text()
    assert "Budgeted estimates" not in (tmp_path / "report" / "report.html").read_text()


def test_estimates_are_seeded_and_recorded(tmp_path):
    _budgeted_run(tmp_path / "runs", "model-a", _truth(10))
    runs = load_runs([tmp_path / "runs"])
    first = aggregate(runs, n_boot=0, estimate_draws=30, seed="s1").budget.instructions
    again = aggregate(runs, n_boot=0, estimate_draws=30, seed="s1").budget.instructions
    other = aggregate(runs, n_boot=0, estimate_draws=30, seed="s2").budget.instructions
    assert first.equals(again)
    assert first["estimate"].equals(other["estimate"]) and not first["ci_low"].equals(other["ci_low"])


def test_a_budgeted_variant_without_matching_samples_is_an_error_not_a_number(tmp_path):
    path, variants = _budgeted_run(tmp_path / "runs", "model-a", _truth(10))
    _full_run(tmp_path / "runs", "model-b", _truth(11))
    sample = next(path.parent.glob(f"samples_{variants[2].name}_*.jsonl"))
    lines = sample.read_text().splitlines()
    sample.write_text("\n".join(lines[:-1]) + "\n")  # one cell missing: samples of another run
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=0, estimate_draws=0)
    errors = [i for i in result.issues if i.code == "budget"]
    assert len(errors) == 1 and "samples of another run" in errors[0].message
    assert set(result.instructions["model"]) == {"model-b"}  # the grid is dropped, the other model kept


def test_estimate_budgeted_leaves_full_runs_alone(tmp_path):
    _full_run(tmp_path / "runs", "model-b", _truth(11))
    runs = load_runs([tmp_path / "runs"])
    variants, estimates = estimate_budgeted(runs.variants, {("model-b", "agnews"): "acc"}, runs.issues)
    assert estimates is None and variants == runs.variants


def test_leaderboard_tables_say_when_the_instructeval_side_is_estimated(tmp_path):
    from instructeval_aggregation.leaderboard_report import add_leaderboard

    path, _ = _budgeted_run(tmp_path / "runs", "model-a", _truth(10))
    meta = {"leaderboard": {"instructeval_task": "agnews", "stock_task": "ag_news", "metric": "acc", "num_fewshot": 0,
                            "test_ids": list(range(N_ITEMS)), "data_source": "local:agnews", "test_sample": N_ITEMS,
                            "test_seed": 0}}
    stock = {"results": {"ag_news": {"alias": "ag_news", "acc,none": 0.5}},
             "configs": {"ag_news": {"task": "ag_news", "num_fewshot": 0, "metadata": meta}},
             "n-samples": {"ag_news": {"original": N_ITEMS, "effective": N_ITEMS}},
             "config": {"model": "hf", "model_args": "pretrained=/models/model-a"}, "model_name": "model-a"}
    (path.parent / "results_2024-01-02T00-00-00.000000.json").write_text(json.dumps(stock))
    map_file = tmp_path / "map.yaml"
    map_file.write_text("counterparts:\n  agnews:\n    stock_task: ag_news\n    metric: acc\n    num_fewshot: 0\n")
    runs = load_runs([tmp_path / "runs"])
    result = aggregate(runs, n_boot=0, estimate_draws=0)
    add_leaderboard(result, runs, [tmp_path / "runs"], leaderboard_map=str(map_file))
    notes = [t.note for name, t in result.tables.items() if name.startswith("leaderboard")]
    assert notes and all("agnews zero_shot are estimates of a budgeted sweep" in n for n in notes)


@pytest.mark.parametrize("equal_headline", [True, False])
def test_an_estimate_never_replaces_the_exact_result_of_the_same_variant(tmp_path, equal_headline):
    """A budgeted and a full run of one model: the exact numbers are kept and the estimate is named and dropped,
    whether or not the headline scores happen to be equal."""
    y = _truth(10)
    _, budgeted = _budgeted_run(tmp_path / "budgeted", "model-a", y)
    full = y.copy()
    if equal_headline:  # the budgeted cells' mean equals the exact accuracy by chance: same headline number
        for i, variant in enumerate(budgeted):
            target = float(np.mean(variant.correct))
            k = int(round(target * N_ITEMS))
            full[i] = np.array([1.0] * k + [0.0] * (N_ITEMS - k))
            assert full[i].mean() == pytest.approx(target)
    _full_run(tmp_path / "full", "model-a", full)
    runs = load_runs([tmp_path / "budgeted", tmp_path / "full"])
    issues = [i for i in runs.issues.sorted() if i.code == "budget-duplicate"]
    assert len(issues) == len(INSTRUCTIONS)
    assert all(i.level == "error" and "--budget 0.25 seed 0" in i.message and "exact result is kept" in i.message for i in issues)
    result = aggregate(runs, n_boot=0, estimate_draws=0)
    assert result.budget is None
    inst = result.instructions.set_index("instruction")
    for i, (_, iid) in enumerate(INSTRUCTIONS):
        assert inst.loc[iid, "zero_shot"] == pytest.approx(full[i].mean(), abs=1e-12)


def test_budgeted_copies_of_different_budgets_are_both_dropped(tmp_path):
    y = _truth(10)
    _budgeted_run(tmp_path / "a", "model-a", y, fraction=0.25)
    _budgeted_run(tmp_path / "b", "model-a", y, fraction=0.5)
    runs = load_runs([tmp_path / "a", tmp_path / "b"])
    conflicts = [i for i in runs.issues.sorted() if i.code == "budget-conflict"]
    assert conflicts and all("--budget 0.25 seed 0" in i.message and "--budget 0.5 seed 0" in i.message for i in conflicts)
    assert not runs.variants


def test_the_estimates_say_which_design_dealt_the_cells(tmp_path):
    _budgeted_run(tmp_path / "runs", "model-a", _truth(10), design="balanced")
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=0, estimate_draws=0)
    assert result.budget.grids["design"].tolist() == ["balanced"]
    write_report(result, tmp_path / "report")
    assert "balanced design)" in (tmp_path / "report" / "report.html").read_text()
    assert "design" in (tmp_path / "report" / "data" / "budget_grids.csv").read_text().splitlines()[0]


def test_the_fit_gives_each_gold_class_its_own_instruction_effects(tmp_path):
    labels = [str(j % 4) for j in range(N_ITEMS)]
    _budgeted_run(tmp_path / "runs", "model-a", _truth(10), targets=labels)
    runs = load_runs([tmp_path / "runs"])
    result = aggregate(runs, n_boot=0, estimate_draws=0)
    assert result.budget.grids["item_classes"].tolist() == [4]
    assert not [i for i in result.issues if i.code == "budget"]
    write_report(result, tmp_path / "report")
    assert "effects per gold class (4 classes)" in (tmp_path / "report" / "report.html").read_text()
    assert "item_classes" in (tmp_path / "report" / "data" / "budget_grids.csv").read_text().splitlines()[0]
    # the samples' gold answer ("3" or 3 alike) is what the classes are read from: one answer, one effect
    _budgeted_run(tmp_path / "one", "model-a", _truth(10))
    assert aggregate(load_runs([tmp_path / "one"]), n_boot=0, estimate_draws=0).budget.grids["item_classes"].tolist() == [1]


def test_open_answers_are_no_classes(tmp_path):
    _budgeted_run(tmp_path / "runs", "model-a", _truth(10), targets=[f"answer {j}" for j in range(N_ITEMS)], task="nq_open")
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=0, estimate_draws=0)
    assert result.budget.grids["item_classes"].tolist() == [1]


def _rewrite_targets(path: str, change) -> None:
    lines = [json.loads(x) for x in open(path, encoding="utf-8").read().splitlines() if x.strip()]
    for line in lines:
        line["target"] = change(line["doc_id"], line["target"])
    open(path, "w", encoding="utf-8").write("".join(json.dumps(x) + "\n" for x in lines))


def test_an_item_with_two_gold_answers_is_an_error_naming_the_samples_file(tmp_path):
    labels = [str(j % 4) for j in range(N_ITEMS)]
    _budgeted_run(tmp_path / "runs", "model-a", _truth(10), targets=labels)
    runs = load_runs([tmp_path / "runs"])
    seen: dict[int, str] = {}
    for v in sorted(runs.variants, key=lambda v: v.name):  # an item a second variant evaluated too
        items = v.metadata["budget"]["items"]
        shared = [j for j in items if j in seen]
        if shared:
            _rewrite_targets(v.samples_path, lambda doc_id, target: "9" if doc_id == shared[0] else target)
            break
        seen.update(dict.fromkeys(items, v.name))
    with pytest.raises(AggregationError) as err:  # the grid is dropped, not fitted to mixed data: nothing is left
        aggregate(load_runs([tmp_path / "runs"]), n_boot=0, estimate_draws=0)
    errors = [i for i in err.value.issues if i.level == "error" and i.code == "budget"]
    assert errors and f"item {shared[0]} has gold answer '9' here" in errors[0].message and errors[0].file == v.samples_path


def test_an_item_no_instruction_saw_leaves_one_effect_per_instruction_and_says_so(tmp_path):
    labels = [str(j % 4) for j in range(N_ITEMS)]
    _budgeted_run(tmp_path / "runs", "model-a", _truth(10), targets=labels)
    runs = load_runs([tmp_path / "runs"])
    for v in runs.variants:  # blank one item's gold answer in every samples file
        _rewrite_targets(v.samples_path, lambda doc_id, target: None if doc_id == 5 else target)
    runs = load_runs([tmp_path / "runs"])
    result = aggregate(runs, n_boot=0, estimate_draws=0)
    assert result.budget.grids["item_classes"].tolist() == [1]
    warnings = [i for i in result.issues if i.code == "budget" and i.level == "warning"]
    assert warnings and "items [5]" in warnings[0].message


def test_method_rows_give_the_relative_gain_and_the_difference_to_null_with_intervals(tmp_path):
    _budgeted_run(tmp_path / "runs", "model-a", _truth(10))  # null estimated like the others: 10 of 40 items
    runs = load_runs([tmp_path / "runs"])
    result = aggregate(runs, n_boot=0, estimate_draws=100)
    methods = result.budget.methods.set_index("method")
    gains = result.gains[(result.gains["model"] == "model-a") & (result.gains["metric"] == "zero_shot")]
    for method in ("null", "generic"):  # the main gain table's number, with an interval from the draws
        assert methods.loc[method, "gain"] == pytest.approx(gains.loc[gains["method"] == method, "gain"].mean())
        assert methods.loc[method, "gain_low"] < methods.loc[method, "gain"] < methods.loc[method, "gain_high"]
    generic, null = methods.loc["generic"], methods.loc["null"]
    assert generic["vs_null"] == pytest.approx(generic["estimate"] - null["estimate"])
    assert generic["vs_null_low"] < generic["vs_null"] < generic["vs_null_high"]
    assert (generic["p_above_null"] > 0.5) == (generic["vs_null"] > 0)
    # the baseline's own uncertainty is in the difference: wider than the method mean's interval
    assert generic["vs_null_high"] - generic["vs_null_low"] > generic["ci_high"] - generic["ci_low"]
    assert np.isnan(null["vs_null"]) and np.isnan(null["p_above_null"])
    # --null-weight reaches the baseline; no draws, no intervals
    flat = aggregate(runs, n_boot=0, estimate_draws=0, null_weight=1).budget.methods.set_index("method")
    est = result.budget.instructions
    mu = est["estimate"].mean()
    generic_rows = est.loc[est["method"] == "generic", "estimate"]
    assert flat.loc["generic", "gain"] == pytest.approx(float(np.mean(100 * (generic_rows - mu) / mu)))
    assert np.isnan(flat.loc["generic", "gain_low"]) and np.isnan(flat.loc["generic", "p_above_null"])
    write_report(result, tmp_path / "report")
    assert "difference to null" in (tmp_path / "report" / "report.html").read_text()
    header = (tmp_path / "report" / "data" / "budget_methods.csv").read_text().splitlines()[0]
    assert header.endswith("gain,gain_low,gain_high,vs_null,vs_null_low,vs_null_high,p_above_null")


def test_the_difference_to_an_estimated_null_covers_the_full_grid_s_difference():
    from instructeval_aggregation.bootstrap import rng_for
    from instructeval_aggregation.budgeted import estimate_grid, method_contrasts
    from instructeval_tasks.estimation.item_response import Cells

    # null (one instruction) and two methods of eight instructions, 15% of the cells each, null included
    methods = ["null"] + ["generic"] * 8 + ["adhoc"] * 8
    shift = np.array([0.0] + [0.4] * 8 + [-0.3] * 8)
    covered, widths, naive = [], [], []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        p = 1 / (1 + np.exp(-(shift + rng.normal(0, 0.3, 17))[:, None] - rng.normal(0, 1.2, 80)[None, :]))
        y = (rng.random(p.shape) < p).astype(float)
        mask = rng.random(y.shape) < 0.15
        rows, cols = np.nonzero(mask)
        cells = Cells(rows, cols, y[rows, cols], 17, 80, np.array([0] + [1] * 8 + [2] * 8))
        est = estimate_grid(cells, n_boot=300, level=0.95, rng=rng_for("test", seed))
        _, exact = method_contrasts(y.mean(axis=1), methods)
        _, drawn = method_contrasts(est.replicates, methods)
        for method in ("generic", "adhoc"):
            lo, hi = np.quantile(drawn[method], [0.025, 0.975])
            covered.append(lo <= exact[method] <= hi)
            widths.append(hi - lo)
        seen = y[0, mask[0]]  # the interval of the null's own observed cells alone: binomial, 95%
        naive.append(2 * 1.96 * np.sqrt(max(seen.mean() * (1 - seen.mean()), 0.05) / seen.size))
    assert np.mean(covered) >= 0.85  # 24 intervals at nominal 95%
    # and narrower than the null's own cells allow: the item effects, seen under every instruction, carry over
    assert np.mean(widths) < 0.85 * np.mean(naive)


# --------------------------------------------------------------------------- label scores

LABELS = (" World", " Sports", " Business", " Sci/Tech")
LABEL_TOKENS = {" World": 1, " Sports": 1, " Business": 1, " Sci/Tech": 3}


def _label_scores(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lls, per_token, gold)``: every label's log-likelihood on a 7 x 40 grid whose per-token scores
    follow the choice-score model (item leans, instruction pulls, noise), and the gold labels."""
    rng = np.random.default_rng(seed)
    gold = np.arange(N_ITEMS) % 4
    lean = rng.normal(0, 1, (N_ITEMS, 4)) + 0.9 * (np.arange(4)[None, :] == gold[:, None])
    pull = rng.normal(0, 1.0, (len(INSTRUCTIONS), 4))
    per_token = lean[None] + pull[:, None] + rng.normal(0, 0.3, (len(INSTRUCTIONS), N_ITEMS, 4))
    return per_token * np.array([LABEL_TOKENS[label] for label in LABELS]), per_token, gold


def _scored_run(folder, seed: int = 3, *, token_counts: bool = True, flip: bool = False):
    lls, per_token, gold = _label_scores(seed)
    y = (per_token.argmax(axis=-1) == gold[None]).astype(float)
    names = [f"instructeval_agnews__{iid}__zs" for _, iid in INSTRUCTIONS]
    cells = assign_cells(names, list(gold), Budget(0.25, min_items=4), "agnews:zs")
    variants = []
    for i, ((method, iid), name) in enumerate(zip(INSTRUCTIONS, names)):
        items = cells[name]
        correct = list(y[i, items])
        if flip and i == 1:
            correct[0] = 1.0 - correct[0]  # a metric value the scores do not give
        budget = {"fraction": 0.25, "seed": 0, "min_items": 4, "grid": "agnews:zs", "items": items, "n_items": N_ITEMS,
                  "grid_cells": sum(map(len, cells.values())), "grid_size": N_ITEMS * len(names), "design": "balanced"}
        meta = {"budget": budget, **({"choice_token_counts": LABEL_TOKENS} if token_counts else {})}
        variants.append(SyntheticVariant("agnews", method, iid, "zero_shot", correct=correct, doc_ids=items, n_test=N_ITEMS,
                                         metadata=meta, targets=[str(gold[j]) for j in items],
                                         label_scores=lls[i, items].tolist(), labels=LABELS))
    write_run(folder, "model-a", variants)
    return y


def test_a_classification_grid_is_estimated_from_its_label_scores(tmp_path):
    errors: dict[str, list[float]] = {"scores": [], "item-response": []}
    for seed in range(3, 9):
        y = _scored_run(tmp_path / f"scored{seed}", seed)
        _scored_run(tmp_path / f"plain{seed}", seed, token_counts=False)
        for name, folder in (("scores", f"scored{seed}"), ("item-response", f"plain{seed}")):
            result = aggregate(load_runs([tmp_path / folder]), n_boot=0, estimate_draws=100)
            grid = result.budget.grids.iloc[0]
            assert grid["estimator"].startswith("choice scores (log-likelihood per token of 4 labels)" if name == "scores"
                                                else "item-response (acc_per_token needs the labels' token counts")
            estimates = result.budget.instructions.set_index("instruction")["estimate"]
            rows = [k for k, (method, _) in enumerate(INSTRUCTIONS) if method != "null"]
            errors[name].append(np.mean([abs(estimates[INSTRUCTIONS[k][1]] - y[k].mean()) for k in rows]))
            assert not [i for i in result.issues if i.code == "budget"]
    # the labels' scores say more than the answers: the unobserved cells are predicted closer
    # (per-instruction error over six grids: 3.5 against 5.5 points)
    assert np.mean(errors["scores"]) < 0.7 * np.mean(errors["item-response"])
    write_report(result, tmp_path / "report")  # the last one: without token counts
    html = (tmp_path / "report" / "report.html").read_text()
    assert "effects per gold class (4 classes)" in html and "label scores (" not in html
    result = aggregate(load_runs([tmp_path / "scored3"]), n_boot=0, estimate_draws=50)
    write_report(result, tmp_path / "report_scored")
    html = (tmp_path / "report_scored" / "report.html").read_text()
    assert "estimated from the observed cells' label scores (log-likelihood per token of 4 labels)" in html.replace("&#x27;", "'")
    assert "estimator" in (tmp_path / "report_scored" / "data" / "budget_grids.csv").read_text().splitlines()[0]


def test_label_scores_that_give_another_answer_than_the_metric_are_not_used(tmp_path):
    _scored_run(tmp_path / "runs", flip=True)
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=0, estimate_draws=0)
    assert result.budget.grids["estimator"].tolist() == [
        "item-response (the label scores give another answer than acc_per_token on 1 cells)"]


def test_choice_score_intervals_cover_the_full_grid(tmp_path):
    inside = []
    for seed in (3, 4, 5, 6):
        y = _scored_run(tmp_path / f"runs{seed}", seed)
        frame = aggregate(load_runs([tmp_path / f"runs{seed}"]), n_boot=0, estimate_draws=200).budget.instructions
        truth = {iid: y[k].mean() for k, (_, iid) in enumerate(INSTRUCTIONS)}
        inside += [row.ci_low - 1e-9 <= truth[row.instruction] <= row.ci_high + 1e-9 for row in frame.itertuples()]
    assert np.mean(inside) >= 0.85


def test_label_score_quantile_intervals_span_the_draws_and_the_estimates():
    from instructeval_aggregation.budgeted import QUANTILES, estimate_grid
    from instructeval_tasks.estimation.choice_scores import ChoiceGrid
    from instructeval_tasks.estimation.item_response import Cells

    _, per_token, gold = _label_scores(4)
    y = (per_token.argmax(axis=-1) == gold[None]).astype(float)
    observed = np.random.default_rng(0).random(y.shape) < 0.3
    observed[0] = True
    rows, cols = np.nonzero(observed)
    methods = sorted({method for method, _ in INSTRUCTIONS})
    cells = Cells(rows, cols, y[rows, cols], y.shape[0], y.shape[1],
                  np.array([methods.index(method) for method, _ in INSTRUCTIONS]), gold)
    choice = ChoiceGrid(np.where(observed[..., None], per_token, np.nan), gold, tuple(LABELS))
    est = estimate_grid(cells, n_boot=200, level=0.95, rng=np.random.default_rng(1), choice=choice)
    per_draw = np.quantile(est.replicates, QUANTILES, axis=1).T
    low, high = np.quantile(per_draw, [0.025, 0.975], axis=0)
    moved = est.quantiles - per_draw.mean(axis=0)  # the estimates' quantiles against the draws'
    assert np.allclose(est.quantiles, np.quantile(est.point, QUANTILES)) and np.abs(moved).max() > 1e-3
    # the interval holds the draws' own and the one moved to the estimates
    assert (est.quantile_low <= np.minimum(low, low + moved) + 1e-12).all()
    assert (est.quantile_high >= np.maximum(high, high + moved) - 1e-12).all()
    assert ((est.quantile_low <= est.quantiles) & (est.quantiles <= est.quantile_high)).all()


def test_a_method_with_no_correct_answer_in_its_observed_cells_is_a_warning_with_its_bound(tmp_path):
    y = _truth(10)
    y[1:] = 0.0  # every generic instruction wrong on every item; null right on some
    _budgeted_run(tmp_path / "runs", "model-a", y)
    result = aggregate(load_runs([tmp_path / "runs"]), n_boot=0, estimate_draws=20)
    n = int(result.budget.instructions.query("method == 'generic'")["observed_items"].sum())
    (warning,) = [i for i in result.issues if i.code == "budget" and i.level == "warning"]
    assert warning.message.startswith(f"grid 'agnews:zs' of model-a: no correct answer in the {n} observed cells of "
                                      f"generic (up to {1 - 0.025 ** (1 / n):.1%}): such a method's estimate")
    # a grid with both outcomes in every method's cells says nothing
    _budgeted_run(tmp_path / "mixed", "model-a", _truth(10))
    mixed = aggregate(load_runs([tmp_path / "mixed"]), n_boot=0, estimate_draws=20)
    assert not [i for i in mixed.issues if i.code == "budget" and i.level == "warning"]


def test_an_adaptive_grid_whose_correct_answers_fall_on_few_items_warns_that_its_intervals_are_too_narrow(tmp_path):
    y = np.zeros((len(INSTRUCTIONS), N_ITEMS))
    y[:, :3] = 1.0  # NQ-Open's shape: every correct answer on three items
    _budgeted_run(tmp_path / "rare", "model-a", y, design="adaptive")
    rare = aggregate(load_runs([tmp_path / "rare"]), n_boot=0, estimate_draws=20)
    (warning,) = [i for i in rare.issues if i.code == "budget" and "fall on" in i.message]
    assert re.match(rf"grid 'agnews:zs' of model-a: its observed correct answers fall on [1-3] of {N_ITEMS} items: "
                    r"the adaptive design's intervals can be too narrow", warning.message)
    # the same cells dealt by the balanced design, and an adaptive grid with both outcomes on many items: no warning
    _budgeted_run(tmp_path / "balanced", "model-a", y, design="balanced")
    _budgeted_run(tmp_path / "mixed", "model-a", _truth(10), design="adaptive")
    for folder in ("balanced", "mixed"):
        result = aggregate(load_runs([tmp_path / folder]), n_boot=0, estimate_draws=20)
        assert not [i for i in result.issues if "fall on" in i.message]
