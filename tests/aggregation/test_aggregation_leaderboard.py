"""The "Leaderboard comparison" section, on hand-built results files with hand-computed numbers.

Three models A, B, C on HellaSwag (4 items), instructions null/null, generic/g0, generic/g1.
Stock acc_norm: A 0.25, B 0.50, C 0.75.

Few-shot accuracies (null, g0, g1): A (0.25, 0.50, 0.75), B (0.50, 0.25, 0.50), C (0.75, 0.75, 0.50).
- tau-b: null 1; g0: C=2, D=1 -> 1/3; g1: C=0, D=2, one tie in the accuracies (B, C) ->
  -2 / sqrt(3 * 2) = -0.8165. min -0.8165, median 1/3.
- flips: g0 flips (A, B); g1 flips (A, B), (A, C) -> 2 of 3 stock-ordered pairs = 0.6667; most
  changing: generic/g1.
- percentiles (mid-rank): A: s = 0.25 among (0.25, 0.5, 0.75): (0 + 0.5) / 3 = 16.667;
  B: s = 0.5 among (0.5, 0.25, 0.5): (1 + 1) / 3 = 66.667; C: s = 0.75 among (0.75, 0.75, 0.5): 66.667.
- A: min 25, median 50, max 75, spread 50 points; A generic: median (0.5 + 0.75) / 2 = 62.5.

Zero-shot (null, g0, g1): A (0, 0.25, 0.5), B (0.25, 0.25, 0.25), C (0.5, 0, 0.25).
- tau-b: null 1; g0 and g1 -2 / sqrt(6) each; min = median = -0.8165.
- flips: g0 (A, C), (B, C); g1 (A, B), (A, C) -> all 3 pairs: share 1; most changing: g0 (ties
  with g1 on tau and flips; first in order).
- A's percentile: s = 0.25 among (0, 0.25, 0.5): (1 + 0.5) / 3 = 50.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from instructeval_aggregation.cli import main as aggregate_main
from instructeval_aggregation.leaderboard import (
    ONE_MODEL_NOTE,
    kendall_tau_b,
    percentile_of,
    ranking_stats,
)
from instructeval_aggregation.loading import load_runs
from instructeval_aggregation.pipeline import aggregate
from instructeval_aggregation.leaderboard_report import add_leaderboard
from instructeval_aggregation.testing import SyntheticVariant, sweep_record, write_run

STAMP = "2024-01-02T00-00-00.000000"  # the stock files; the sweeps use testing.DEFAULT_STAMP
ITEMS = {0.0: [0, 0, 0, 0], 0.25: [1, 0, 0, 0], 0.5: [1, 1, 0, 0], 0.75: [1, 1, 1, 0]}
STOCK = {"A": 0.25, "B": 0.5, "C": 0.75}
FEW = {"A": (0.25, 0.5, 0.75), "B": (0.5, 0.25, 0.5), "C": (0.75, 0.75, 0.5)}
ZERO = {"A": (0.0, 0.25, 0.5), "B": (0.25, 0.25, 0.25), "C": (0.5, 0.0, 0.25)}
INSTRUCTIONS = (("null", "null"), ("generic", "g0"), ("generic", "g1"))
SWEEP = sweep_record(n_selections=1, n_orderings=0, ordering_demo_seeds=(), settings=["zero_shot", "few_shot"])


def write_sweep(folder: Path, model: str) -> None:
    variants = []
    for i, (method, iid) in enumerate(INSTRUCTIONS):
        variants.append(SyntheticVariant("hellaswag", method, iid, "zero_shot", correct=ITEMS[ZERO[model][i]]))
        variants.append(SyntheticVariant("hellaswag", method, iid, "few_shot", demo_seed=0, correct=ITEMS[FEW[model][i]]))
    write_run(folder, model, variants, sweep=SWEEP)


def write_stock(folder: Path, model: str, value: float, *, test_ids=(0, 1, 2, 3), record: bool = True,
                pretrained: str | None = None, stamp: str = STAMP, samples: bool = True) -> Path:
    """A stock HellaSwag results file as ``--leaderboard-tasks`` (record=True) or plain lm_eval writes it."""
    out = folder / model
    out.mkdir(parents=True, exist_ok=True)
    meta = {"version": 1.0}
    if record:
        meta["leaderboard"] = {"instructeval_task": "hellaswag", "stock_task": "hellaswag", "metric": "acc_norm", "num_fewshot": 10,
                               "test_ids": list(test_ids), "data_source": "local:hellaswag", "test_sample": 4, "test_seed": 0}
    data = {
        "results": {"hellaswag": {"alias": "hellaswag", "acc,none": 0.5, "acc_norm,none": value, "sample_len": 4}},
        "configs": {"hellaswag": {"task": "hellaswag", "num_fewshot": 10, "metadata": meta}},
        "n-samples": {"hellaswag": {"original": 4, "effective": 4}},
        "config": {"model": "hf", "model_args": f"pretrained={pretrained or '/models/' + model}"},
        "model_name": model if record else (pretrained or f"/models/{model}"),
    }
    path = out / f"results_{stamp}.json"
    path.write_text(json.dumps(data))
    if samples and value in ITEMS:
        rows = [{"doc_id": i, "filter": "none", "acc": 1.0, "acc_norm": float(c)} for i, c in enumerate(ITEMS[value])]
        (out / f"samples_hellaswag_{stamp}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def build(folder: Path, n_boot: int = 0, aliases=None, paths=None):
    runset = load_runs([folder])
    result = aggregate(runset, n_boot=n_boot)
    comparison = add_leaderboard(result, runset, paths or [folder], aliases=aliases)
    return result, comparison


@pytest.fixture
def three_models(tmp_path):
    for model in "ABC":
        write_sweep(tmp_path, model)
        write_stock(tmp_path, model, STOCK[model])
    return tmp_path


def test_primitives_match_the_hand_computation_and_scipy():
    assert kendall_tau_b([0.25, 0.5, 0.75], [0.5, 0.25, 0.75]) == pytest.approx(1 / 3)
    assert kendall_tau_b([0.25, 0.5, 0.75], [0.75, 0.5, 0.5]) == pytest.approx(-2 / math.sqrt(6))
    assert math.isnan(kendall_tau_b([0.25, 0.5, 0.75], [0.5, 0.5, 0.5]))
    assert percentile_of([0.25, 0.5, 0.75], 0.25) == pytest.approx(100 * 0.5 / 3)
    assert percentile_of([0.0, 0.25, 0.5], 0.25) == pytest.approx(50.0)
    stats = pytest.importorskip("scipy.stats")
    for x, y in (([0.25, 0.5, 0.75], [0.75, 0.5, 0.5]), ([1, 2, 2, 3, 5], [2, 1, 2, 4, 4]), ([0.3, 0.1, 0.2, 0.9], [0.1, 0.2, 0.3, 0.4])):
        assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)
    for values, score in (([0.25, 0.5, 0.75], 0.25), ([0.5, 0.25, 0.5], 0.5), ([1, 2, 3, 3, 4], 3), ([1, 2], 5)):
        assert percentile_of(values, score) == pytest.approx(stats.percentileofscore(values, score, kind="mean"))
    r = ranking_stats([0.25, 0.5, 0.75], {"null": [0.25, 0.5, 0.75], "g0": [0.5, 0.25, 0.75], "g1": [0.75, 0.5, 0.5]})
    assert r["n_flipped"] == 2 and r["n_ordered_pairs"] == 3 and r["most_changing"] == "g1"


def test_scores_rankings_and_flips_against_hand_computation(three_models):
    result, comparison = build(three_models)
    scores = comparison.scores.set_index("model")
    assert list(scores.index) == ["A", "B", "C"]
    assert set(scores["same_items"]) == {"yes"} and set(scores["num_fewshot"]) == {10} and set(scores["n_items"]) == {4}
    a = scores.loc["A"]
    assert (a["stock"], a["few_shot_min"], a["few_shot_median"], a["few_shot_max"]) == (0.25, 0.25, 0.5, 0.75)
    assert a["few_shot_spread"] == pytest.approx(50.0)
    assert a["few_shot_percentile"] == pytest.approx(100 * 0.5 / 3)
    assert scores.loc["B", "few_shot_percentile"] == pytest.approx(200 / 3)
    assert scores.loc["C", "few_shot_percentile"] == pytest.approx(200 / 3)
    assert a["zero_shot_percentile"] == pytest.approx(50.0)
    assert (a["zero_shot_min"], a["zero_shot_median"], a["zero_shot_max"]) == (0.0, 0.25, 0.5)
    methods = comparison.methods.set_index(["model", "setting", "method"])
    assert methods.loc[("A", "few_shot", "generic"), "median"] == pytest.approx(0.625)
    assert methods.loc[("A", "few_shot", "null"), "n"] == 1

    rankings = comparison.rankings.set_index("setting")
    few = rankings.loc["few_shot"]
    assert few["n_models"] == 3 and few["n_instructions"] == 3
    assert few["tau_min"] == pytest.approx(-2 / math.sqrt(6))
    assert few["tau_median"] == pytest.approx(1 / 3)
    assert few["flip_share"] == pytest.approx(2 / 3) and few["n_flipped"] == 2
    assert few["most_changing"] == "generic/g1" and few["most_changing_flips"] == 2
    zero = rankings.loc["zero_shot"]
    assert zero["tau_min"] == pytest.approx(-2 / math.sqrt(6)) and zero["tau_median"] == pytest.approx(-2 / math.sqrt(6))
    assert zero["flip_share"] == pytest.approx(1.0) and zero["most_changing"] == "generic/g0"
    assert math.isnan(few["tau_median_ci_low"])  # n_boot=0: no intervals
    assert not [i for i in result.issues if i.code.startswith("leaderboard") or i.code == "empty"]


def test_bootstrap_intervals_are_seeded_and_bracket_the_replicates(three_models):
    _, first = build(three_models, n_boot=200)
    _, second = build(three_models, n_boot=200)
    row = first.rankings.set_index("setting").loc["few_shot"]
    assert row["n_boot"] == 200
    assert -1 <= row["tau_median_ci_low"] <= row["tau_median_ci_high"] <= 1
    assert 0 <= row["flip_share_ci_low"] <= row["flip_share_ci_high"] <= 1
    assert first.rankings.equals(second.rankings)


def test_report_outputs_the_section(three_models, tmp_path):
    out = tmp_path / "report"
    assert aggregate_main([str(three_models), "--out", str(out), "--bootstrap", "50"]) == 0
    for ext in ("md", "csv", "tex"):
        assert (out / "tables" / f"leaderboard_scores.{ext}").is_file()
        assert (out / "tables" / f"leaderboard_rankings.{ext}").is_file()
    md = (out / "tables" / "leaderboard_scores.md").read_text()
    assert "| A | HellaSwag | hellaswag acc_norm 10-shot | 4 (yes) | acc_per_token | 25.0 | 25.0 | 50.0 | 75.0 | 50.0 | 16.7 | 0.0 | 25.0 | 50.0 | 50.0 | 50.0 |" in md
    csv = (out / "tables" / "leaderboard_rankings.csv").read_text().splitlines()
    assert csv[1].startswith("hellaswag,few_shot,3 x 3,yes,2 of 3,generic/g1,-0.816497,,,0.333333,")
    assert "[" in (out / "tables" / "leaderboard_rankings.md").read_text()  # bootstrap intervals printed
    summary = json.loads((out / "summary.json").read_text())
    few = [r for r in summary["leaderboard"]["rankings"] if r["setting"] == "few_shot"][0]
    assert few["tau_median"] == pytest.approx(1 / 3) and few["flip_share"] == pytest.approx(2 / 3)
    assert (out / "plots" / "leaderboard_hellaswag.png").is_file()
    report = (out / "report.html").read_text()
    assert "<h2>Leaderboard comparison (two protocols)</h2>" in report and "leaderboard_hellaswag" in report


def test_unmatched_one_model_and_different_items(tmp_path):
    write_sweep(tmp_path, "A")
    write_stock(tmp_path, "A", 0.25, test_ids=(3, 2, 1, 0))  # other items than the sweep's 0..3
    write_stock(tmp_path, "D", 0.5)  # no InstructEval run of D
    result, comparison = build(tmp_path)
    assert comparison.scores.set_index("model").loc["A", "same_items"] == "no"
    assert list(comparison.unmatched["model"]) == ["D"]
    assert comparison.notes.count(ONE_MODEL_NOTE) == 1 and comparison.rankings.empty
    codes = [(i.level, i.code) for i in result.issues]
    assert ("error", "leaderboard-unmatched") in codes and ("warning", "leaderboard-items") in codes


def test_stock_metric_not_an_accuracy_is_an_error_naming_file_and_metric(tmp_path):
    write_sweep(tmp_path, "A")
    path = write_stock(tmp_path, "A", 37.5)  # a percentage, not a fraction
    result, comparison = build(tmp_path)
    (issue,) = [i for i in result.issues if i.code == "leaderboard-metric"]
    assert issue.level == "error" and issue.file == str(path) and "acc_norm=37.5" in issue.message
    assert comparison.scores.empty


def test_plain_lm_eval_results_match_by_model_name_or_alias(tmp_path):
    for model in "AB":
        write_sweep(tmp_path, model)
    other = tmp_path / "leaderboard_files"
    write_stock(other, "x", 0.25, record=False, pretrained="org/Model-A")
    write_stock(other, "y", 0.5, record=False, pretrained="/models/B")
    result, comparison = build(tmp_path, paths=[tmp_path, other], aliases={"org/Model-A": "A"})
    scores = comparison.scores.set_index("model")
    assert list(scores.index) == ["A", "B"]
    assert set(scores["same_items"]) == {"unknown"}  # no test ids in a plain lm_eval file
    assert comparison.rankings.set_index("setting").loc["few_shot", "tau_median"] == pytest.approx(-1.0)  # null agrees, g0 and g1 reverse A, B
    _, unaliased = build(tmp_path, paths=[tmp_path, other])
    assert list(unaliased.unmatched["model"]) == ["org/Model-A"]


def test_docstring_examples():
    """The examples in the leaderboard modules' docstrings are true."""
    import doctest
    import importlib

    for name in ("instructeval_aggregation.leaderboard", "instructeval_aggregation.leaderboard_loading",
                 "instructeval_tasks.leaderboard_map", "instructeval_tasks.sweep.leaderboard"):
        failures, _ = doctest.testmod(importlib.import_module(name))
        assert failures == 0, name


def test_bad_alias_is_a_one_line_error(three_models, tmp_path, capsys):
    assert aggregate_main([str(three_models), "--out", str(tmp_path / "r"), "--model-alias", "no-equals-sign"]) == 2
    assert "--model-alias 'no-equals-sign': expected NAME=LABEL" in capsys.readouterr().err


def test_a_user_map_chooses_the_compared_metric(tmp_path):
    write_sweep(tmp_path, "A")
    other = tmp_path / "lm_eval_run"
    write_stock(other, "x", 0.25, record=False, pretrained="/models/A", samples=False)  # acc 0.5, acc_norm 0.25
    user_map = tmp_path / "my_map.yaml"
    user_map.write_text("counterparts:\n  hellaswag: {stock_task: hellaswag, metric: acc, num_fewshot: 10}\n")
    runset = load_runs([tmp_path])
    result = aggregate(runset, n_boot=0)
    comparison = add_leaderboard(result, runset, [tmp_path], leaderboard_map=str(user_map))
    (row,) = comparison.scores.itertuples(index=False)
    assert (row.model, row.stock_metric, row.stock) == ("A", "acc", 0.5)


def test_an_unmatched_stock_result_exits_3_and_the_scores_csv_has_unique_columns(three_models, tmp_path, capsys):
    write_stock(three_models, "D", 0.5)  # no InstructEval run of D
    out = tmp_path / "report"
    assert aggregate_main([str(three_models), "--out", str(out)]) == 3
    err = [line for line in capsys.readouterr().err.splitlines() if "leaderboard-unmatched" in line]
    assert len(err) == 1 and "error" in err[0] and "stock hellaswag of model 'D'" in err[0], err
    header = (out / "tables" / "leaderboard_scores.csv").read_text().splitlines()[0].split(",")
    assert len(header) == len(set(header)), header
    assert "stock_protocol" in header and "stock" in header


def _rows_form(folder: Path, test_ids: list[int]) -> None:
    """Rewrite ``folder``'s sweeps and stock files as a sweep on eval rows ``test_ids`` writes them:
    the variants record ``test_ids``; the stock record says its samples' doc_id is the eval row."""
    for path in folder.rglob("results_*.json"):
        data = json.loads(path.read_text())
        for name, config in data["configs"].items():
            meta = config["metadata"]
            if "leaderboard" in meta:
                meta["leaderboard"].update(test_ids=test_ids, doc_ids="eval row")
                samples = path.parent / f"samples_hellaswag_{STAMP}.jsonl"
                rows = [json.loads(line) for line in samples.read_text().splitlines()]
                for row in rows:
                    row["doc_id"] = test_ids[row["doc_id"]]
                rows.sort(key=lambda r: r["doc_id"])  # the harness logs rows in ascending order
                samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
            else:
                meta["test_ids"] = test_ids
        path.write_text(json.dumps(data))


def test_stock_samples_logged_by_eval_row_pair_with_the_instructeval_items(three_models, tmp_path):
    _, by_position = build(three_models, n_boot=100)
    _rows_form(three_models, [7, 3, 9, 1])
    result, by_row = build(three_models, n_boot=100)
    assert set(by_row.scores["same_items"]) == {"yes"}
    few = by_row.rankings.set_index("setting").loc["few_shot"]
    assert not math.isnan(few["tau_median_ci_low"])  # the item bootstrap found every model's items
    assert by_row.rankings.equals(by_position.rankings)  # the very same pairing of items


def _v1_file(folder: Path, model: str, hellaswag: float) -> Path:
    """An Open LLM Leaderboard v1 results file (its layout: harness|task|n keys, config_general)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "config_general": {"lighteval_sha": "0f318ecf002208468154899217b3ba7c6ae09374", "num_few_shot_default": 0,
                           "model_name": model, "model_sha": "abc", "model_dtype": "torch.float16"},
        "results": {
            "harness|arc:challenge|25": {"acc": 0.5, "acc_stderr": 0.01, "acc_norm": 0.55, "acc_norm_stderr": 0.01},
            "harness|hellaswag|10": {"acc": 0.4, "acc_stderr": 0.005, "acc_norm": hellaswag, "acc_norm_stderr": 0.004},
            "harness|hendrycksTest-virology|5": {"acc": 0.4, "acc_norm": 0.4},
            "harness|hendrycksTest-world_religions|5": {"acc": 0.6, "acc_norm": 0.6},
            "harness|truthfulqa:mc|0": {"mc1": 0.3, "mc2": 0.45},
            "all": {"acc": 0.5},
        },
        "versions": {"all": 0, "harness|hellaswag|10": 0},
        "summary_tasks": {"harness|hellaswag|10": {"truncated": 0, "non_truncated": 10042, "padded": 40168}},
    }
    path = folder / "results_2023-10-28T12-00-00.000000.json"
    path.write_text(json.dumps(data))
    return path


def test_open_llm_leaderboard_v1_files_are_read(tmp_path, capsys):
    for model in "AB":
        write_sweep(tmp_path, model)
    v1 = tmp_path / "open-llm-leaderboard"
    _v1_file(v1 / "org" / "Model-A", "org/Model-A", 0.25)
    path_b = _v1_file(v1 / "org" / "Model-B", "org/Model-B", 0.5)
    result, comparison = build(tmp_path, paths=[tmp_path, v1], aliases={"org/Model-A": "A", "org/Model-B": "B"})
    scores = comparison.scores.set_index("model")
    assert list(scores.index) == ["A", "B"]
    assert list(scores["stock"]) == [0.25, 0.5] and set(scores["stock_metric"]) == {"acc_norm"}
    assert set(scores["num_fewshot"]) == {10} and set(scores["n_items"]) == {10042}
    assert set(scores["same_items"]) == {"no"}  # the whole validation split, not the sweep's 4 items
    codes = {(i.level, i.code) for i in result.issues}
    assert ("error", "not-results") not in codes and not any(c == "empty" for _, c in codes)
    (note,) = [i for i in result.issues if i.code == "leaderboard-not-compared" and i.file == str(path_b)]
    assert note.level == "warning" and "arc_challenge (25-shot), truthfulqa_mc2 (0-shot), mmlu_* (2 subjects)" in note.message
    out = tmp_path / "report"
    assert aggregate_main([str(tmp_path), str(v1), "--out", str(out), "--model-alias", "org/Model-A=A",
                           "--model-alias", "org/Model-B=B"]) == 0
    assert "hellaswag acc_norm 10-shot" in (out / "tables" / "leaderboard_scores.md").read_text()


def test_other_formats_are_named(tmp_path):
    write_sweep(tmp_path, "A")
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "results_2024-06-01T00-00-00.000000.json").write_text(json.dumps({
        "results": {"leaderboard_bbh_navigate": {"alias": " - leaderboard_bbh_navigate", "acc_norm,none": 0.5}},
        "configs": {"leaderboard_bbh_navigate": {"task": "leaderboard_bbh_navigate", "num_fewshot": 3}},
        "config": {"model": "hf", "model_args": "pretrained=org/Model-A"}, "model_name": "org/Model-A"}))
    (v2 / "results_2024-06-02T00-00-00.000000.json").write_text(json.dumps({"scores": {"hellaswag": 0.5}}))
    result, _ = build(tmp_path, paths=[tmp_path, v2])
    runset = load_runs([tmp_path, v2])
    by_code = {i.code: i.message for i in runset.issues.items}
    assert "Open LLM Leaderboard v2 results: no InstructEval variant and no stock task" in by_code["empty"]
    assert "leaderboard_bbh_navigate" in by_code["empty"]
    assert "Open LLM Leaderboard v1 results" in by_code["not-results"] and "lm-eval results_*.json" in by_code["not-results"]


def test_a_v1_file_without_its_model_name_says_so(tmp_path, capsys):
    """An Open LLM Leaderboard v1 file without config_general is named for what it lacks (the model
    name, and where to put it), not refused as "not a results file"; the rest is compared."""
    for model in "AB":
        write_sweep(tmp_path, model)
    v1 = tmp_path / "open-llm-leaderboard"
    _v1_file(v1 / "org" / "Model-A", "org/Model-A", 0.25)
    nameless = _v1_file(v1 / "org" / "Model-B", "org/Model-B", 0.5)
    data = json.loads(nameless.read_text())
    del data["config_general"]
    nameless.write_text(json.dumps(data))
    result, comparison = build(tmp_path, paths=[tmp_path, v1], aliases={"org/Model-A": "A"})
    runset = load_runs([tmp_path, v1])
    (issue,) = [i for i in runset.issues.items if i.file == str(nameless)]
    assert (issue.level, issue.code) == ("error", "no-model")
    assert "without a model name" in issue.message and '"config_general": {"model_name": "<org>/<model>"}' in issue.message
    assert list(comparison.scores["model"]) == ["A"]
    capsys.readouterr()
    assert aggregate_main([str(tmp_path), str(v1), "--out", str(tmp_path / "out"), "--bootstrap", "0", "--no-plots",
                           "--model-alias", "org/Model-A=A"]) == 3
    err = capsys.readouterr().err
    assert f"error [no-model] file {nameless}" in err and "not-results" not in err


def test_the_items_warning_is_one_sentence_for_each_case(tmp_path):
    """leaderboard-items: other items, or items that cannot be checked (a plain lm_eval file), each
    worded as its own sentence."""
    write_sweep(tmp_path, "A")
    write_sweep(tmp_path, "B")
    write_stock(tmp_path, "A", 0.25, test_ids=(3, 2, 1, 0))
    write_stock(tmp_path / "plain", "x", 0.5, record=False, pretrained="/models/B")
    result, comparison = build(tmp_path, paths=[tmp_path, tmp_path / "plain"])
    by_model = {m: s for m, s in zip(comparison.scores["model"], comparison.scores["same_items"])}
    assert by_model == {"A": "no", "B": "unknown"}
    messages = sorted(i.message for i in result.issues if i.code == "leaderboard-items")
    assert messages == [
        "stock hellaswag of A was measured on other test items than the InstructEval runs of hellaswag "
        "(other test ids, data source or item count)",
        "stock hellaswag of B records no test ids, so whether it was measured on the same test items as the "
        "InstructEval runs of hellaswag cannot be checked",
    ]
