"""The instruction-type breakdown of a fully scored harness grid (``harness_methods``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from instructeval_aggregation.harness_methods import method_rows


def test_each_method_is_its_instructions_mean_paired_with_the_stock_row_on_the_items():
    rng = np.random.default_rng(0)
    Y = (rng.random((5, 80)) < np.array([[0.5], [0.6], [0.7], [0.4], [0.5]])).astype(float)
    methods = ["null", "generic", "generic", "adhoc", "promptsource"]
    rows = {r["method"]: r for r in method_rows(Y, methods, level=0.95)}
    assert sorted(rows) == ["adhoc", "generic", "promptsource"]
    g = rows["generic"]
    per_item = Y[1:3].mean(axis=0)
    d = per_item - Y[0]
    se = np.std(d, ddof=1) / math.sqrt(80)
    assert g["n_instructions"] == 2 and g["n_items"] == 80
    assert g["score"] == pytest.approx(per_item.mean()) and g["vs_stock"] == pytest.approx(d.mean())
    assert (g["vs_stock_low"], g["vs_stock_high"]) == pytest.approx((d.mean() - 1.959964 * se, d.mean() + 1.959964 * se))
    assert g["detectable_difference"] == pytest.approx((1.959964 + 0.841621) * se, rel=1e-5)


def test_a_grid_with_an_unscored_cell_or_no_stock_row_has_no_breakdown():
    Y = np.ones((3, 10))
    Y[1, 4] = np.nan
    assert method_rows(Y, ["null", "generic", "generic"], level=0.95) == []
    assert method_rows(np.ones((2, 10)), ["generic", "adhoc"], level=0.95) == []


def test_harness_metric_reads_the_named_score_and_warns_where_a_variant_lacks_it(tmp_path):
    """``--harness-metric acc_norm``: the variants that report it are read on it, per item too; one
    without it keeps its first metric and says so."""
    import json

    from instructeval_aggregation.harness_effects import load_harness_results
    from instructeval_aggregation.issues import IssueLog

    out = tmp_path / "m"
    out.mkdir()
    results, configs = {}, {}
    for iid, acc, norm in (("null", 0.25, 0.5), ("generic-1", 0.5, None)):
        name = f"hellaswag__{iid}"
        results[name] = {"acc,none": acc, **({"acc_norm,none": norm} if norm is not None else {})}
        configs[name] = {"metric_list": [{"metric": "acc"}, {"metric": "acc_norm"}], "metadata": {
            "model_label": "m", "harness": {"task": "hellaswag", "method": iid.split("-")[0], "instruction_id": iid}}}
    (out / "results_harness__hellaswag.json").write_text(json.dumps({"results": results, "configs": configs}))
    issues = IssueLog()
    found = {r.instruction_id: r for r in load_harness_results([str(out)], issues, samples=False, metric="acc_norm")}
    assert (found["null"].metric, found["null"].value) == ("acc_norm,none", 0.5)
    assert (found["generic-1"].metric, found["generic-1"].value) == ("acc,none", 0.5)
    (warning,) = [i for i in issues.items if i.code == "harness-metric"]
    assert "no acc_norm" in warning.message and warning.variant == "hellaswag__generic-1"
    plain = load_harness_results([str(out)], IssueLog(), samples=False)
    assert {r.metric for r in plain} == {"acc,none"}


def test_a_harness_metric_no_variant_reports_is_one_line_exit_2_naming_those_reported(tmp_path, capsys):
    import json

    from instructeval_tasks.cli import main as cli_main

    out = tmp_path / "m"
    out.mkdir()
    results, configs = {}, {}
    for iid in ("null", "generic-1"):
        name = f"hellaswag__{iid}"
        results[name] = {"acc,none": 0.4, "acc_norm,none": 0.5}
        configs[name] = {"metric_list": [{"metric": "acc"}, {"metric": "acc_norm"}], "metadata": {
            "model_label": "m", "harness": {"task": "hellaswag", "method": iid.split("-")[0], "instruction_id": iid}}}
    (out / "results_harness__hellaswag.json").write_text(json.dumps({"results": results, "configs": configs}))
    capsys.readouterr()
    assert cli_main(["aggregate", str(tmp_path), "--out", str(tmp_path / "agg"), "--no-plots",
                     "--harness-metric", "f1_macro"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["instructeval: error: --harness-metric f1_macro: no harness variant reports it; they report acc "
                   "(the first metric of each where the named one is missing)"]
    assert not (tmp_path / "agg").exists()


def test_a_bad_model_registry_is_an_error_whatever_the_inputs_hold(tmp_path, capsys):
    from instructeval_tasks.cli import main as cli_main

    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "results_x.json").write_text('{"results": {}, "configs": {}}')
    registry = tmp_path / "reg.yaml"
    registry.write_text("models: [unclosed\n")
    capsys.readouterr()
    assert cli_main(["aggregate", str(tmp_path / "runs"), "--out", str(tmp_path / "agg"), "--model-registry",
                     str(registry)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("instructeval: error: ") and str(registry) in line
