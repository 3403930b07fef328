"""Relative gain, null weighting, the mu = 0 case and the cross-model mean, checked by hand."""

from __future__ import annotations

import math

import pytest

from instructeval_aggregation import aggregate, load_runs
from instructeval_aggregation.relative_gain import weighted_baseline
from instructeval_aggregation.testing import SyntheticVariant, write_run

ZS = "zero_shot"


def zs(task, method, iid, value):
    return SyntheticVariant(task, method, iid, ZS, value=value)


def two_models(tmp_path):
    """Model A: null .50, generic .60/.40, promptsource .70; model B: null .30, generic .30/.50, ps .40."""
    a = [zs("agnews", "null", "null", 0.50), zs("agnews", "generic", "g0", 0.60), zs("agnews", "generic", "g1", 0.40), zs("agnews", "promptsource", "p0", 0.70)]
    b = [zs("agnews", "null", "null", 0.30), zs("agnews", "generic", "g0", 0.30), zs("agnews", "generic", "g1", 0.50), zs("agnews", "promptsource", "p0", 0.40)]
    write_run(tmp_path, "model-a", a, samples=False)
    write_run(tmp_path, "model-b", b, samples=False)
    return load_runs([tmp_path])


def test_weighted_baseline_by_hand():
    """mu = (5 * 0.5 + 0.6 + 0.4 + 0.7) / (5 + 3) = 4.2 / 8 = 0.525; unweighted (0.5+0.6+0.4+0.7)/4 = 0.55."""
    assert weighted_baseline([0.5, 0.6, 0.4, 0.7], ["null", "generic", "generic", "promptsource"]) == pytest.approx(0.525)
    assert weighted_baseline([0.5, 0.6, 0.4, 0.7], ["null", "generic", "generic", "promptsource"], 1.0) == pytest.approx(0.55)


def test_gains_with_null_weight_five(tmp_path):
    """Every gain and cell of a two-model table, with the arithmetic written out.

    Model A: mu_A = (5*.50 + .60 + .40 + .70) / 8 = 0.525
      null  100*(.50-.525)/.525 = -4.761905    g0 100*(.075)/.525 = 14.285714
      g1    100*(-.125)/.525   = -23.809524    p0 100*(.175)/.525 = 33.333333
      generic(A) = (14.285714 - 23.809524)/2 = -4.761905
    Model B: mu_B = (5*.30 + .30 + .50 + .40) / 8 = 2.7/8 = 0.3375
      null  100*(-.0375)/.3375 = -11.111111    g0 = -11.111111
      g1    100*(.1625)/.3375  =  48.148148    p0 100*(.0625)/.3375 = 18.518519
      generic(B) = (-11.111111 + 48.148148)/2 = 18.518519
    Cells (models weighted equally):
      Null         (-4.761905 - 11.111111)/2 = -7.936508
      Generic      (-4.761905 + 18.518519)/2 =  6.878307
      PromptSource (33.333333 + 18.518519)/2 = 25.925926
    """
    result = aggregate(two_models(tmp_path), n_boot=0)
    base = result.baselines.set_index(["metric", "model", "task"])["mu"]
    assert base[(ZS, "model-a", "agnews")] == pytest.approx(0.525)
    assert base[(ZS, "model-b", "agnews")] == pytest.approx(0.3375)
    gains = result.gains.set_index(["model", "instruction"])["gain"]
    assert gains[("model-a", "null")] == pytest.approx(-4.761905, abs=1e-6)
    assert gains[("model-a", "g0")] == pytest.approx(14.285714, abs=1e-6)
    assert gains[("model-a", "g1")] == pytest.approx(-23.809524, abs=1e-6)
    assert gains[("model-a", "p0")] == pytest.approx(33.333333, abs=1e-6)
    assert gains[("model-b", "g1")] == pytest.approx(48.148148, abs=1e-6)
    table = result.table("gain_zero_shot")
    assert table.loc["null", "agnews"] == pytest.approx(-7.936508, abs=1e-6)
    assert table.loc["generic", "agnews"] == pytest.approx(6.878307, abs=1e-6)
    assert table.loc["promptsource", "agnews"] == pytest.approx(25.925926, abs=1e-6)
    assert list(table.index) == ["null", "generic", "promptsource"]


def test_null_weight_switch(tmp_path):
    """--null-weight 1: mu_A = 0.55, null gain(A) = 100*(.50-.55)/.55 = -9.090909;
    mu_B = (.3+.3+.5+.4)/4 = 0.375, null gain(B) = 100*(-.075)/.375 = -20; Null cell = -14.545455."""
    result = aggregate(two_models(tmp_path), n_boot=0, null_weight=1.0)
    gains = result.gains.set_index(["model", "instruction"])["gain"]
    assert gains[("model-a", "null")] == pytest.approx(-9.090909, abs=1e-6)
    assert gains[("model-b", "null")] == pytest.approx(-20.0, abs=1e-9)
    assert result.table("gain_zero_shot").loc["null", "agnews"] == pytest.approx(-14.545455, abs=1e-6)


def test_mu_zero_is_nan_and_reported(tmp_path):
    """A (model, task) whose instructions all score 0 has no gains: NaN, a mu-zero warning, the model
    left out of the cell (n_models 1 of 2, dagger in the Markdown)."""
    zero = [zs("nq_open", "null", "null", 0.0), zs("nq_open", "generic", "g0", 0.0)]
    fine = [zs("nq_open", "null", "null", 0.2), zs("nq_open", "generic", "g0", 0.3)]
    write_run(tmp_path, "tiny", zero, samples=False)
    write_run(tmp_path, "big", fine, samples=False)
    result = aggregate(load_runs([tmp_path]), n_boot=0)
    codes = [i.code for i in result.issues]
    assert "mu-zero" in codes
    status = result.baselines.set_index("model")["status"]
    assert status["tiny"] == "mu=0" and status["big"] == "ok"
    assert result.gains[result.gains["model"] == "tiny"]["gain"].isna().all()
    # big: mu = (5*.2 + .3)/6 = 1.3/6; generic gain = 100*(.3 - 1.3/6)/(1.3/6) = 38.461538
    cell = result.cells.set_index(["kind", "metric", "task", "method"]).loc[("gain", ZS, "nq_open", "generic")]
    assert cell["value"] == pytest.approx(38.461538, abs=1e-6)
    assert cell["n_models"] == 1
    from instructeval_aggregation.tables import to_markdown

    assert "†" in to_markdown(result.tables["gain_zero_shot"])
    assert all(math.isfinite(v) for v in result.table("gain_zero_shot")["nq_open"])
