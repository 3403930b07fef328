"""Bootstrap intervals (coverage on data with a known answer), the paired test, worst case, seeds."""

from __future__ import annotations

import numpy as np
import pytest

from instructeval_aggregation import aggregate, load_runs
from instructeval_aggregation.bootstrap import method_gain_replicates, resample_counts, rng_for
from instructeval_aggregation.samples import ItemMatrix
from instructeval_aggregation.testing import SyntheticVariant, sweep_record, write_run

# Instructions with true accuracies; mu = (5*.5 + .6 + .4 + .7)/8 = .525.
TRUE = {("null", "null"): 0.5, ("generic", "g0"): 0.6, ("generic", "g1"): 0.4, ("ape", "a0"): 0.7}
MU = 0.525
TRUE_CELL = {
    "null": 100 * (0.5 - MU) / MU,
    "generic": 100 * ((0.6 + 0.4) / 2 - MU) / MU,
    "ape": 100 * (0.7 - MU) / MU,
}


def zero_shot_matrix(rng: np.random.Generator, n: int) -> ItemMatrix:
    keys = sorted(TRUE)
    values = np.vstack([(rng.random(n) < TRUE[k]).astype(float) for k in keys])
    return ItemMatrix("m", "agnews", np.arange(n), values, {"zero_shot": {k: [i] for i, k in enumerate(keys)}})


def test_ci_coverage_on_synthetic_data():
    """Over 200 seeded synthetic test sets of 200 items, at least 90% of the 95% percentile intervals
    of every method's mean relative gain cover the true (population) gain."""
    draws, n, n_boot = 200, 200, 400
    rng = np.random.default_rng(20240601)
    covered = {m: 0 for m in TRUE_CELL}
    for r in range(draws):
        matrix = zero_shot_matrix(rng, n)
        counts = resample_counts(rng_for("coverage", r), n, n_boot)
        reps = method_gain_replicates(matrix, "zero_shot", counts, null_weight=5.0)
        for method, truth in TRUE_CELL.items():
            lo, hi = np.quantile(reps[method], [0.025, 0.975])
            covered[method] += lo <= truth <= hi
    rates = {m: c / draws for m, c in covered.items()}
    assert all(rate >= 0.90 for rate in rates.values()), rates


def test_replicates_recompute_the_point_estimate():
    """With the identity resample (every item once) the replicate equals the point estimate."""
    matrix = zero_shot_matrix(np.random.default_rng(1), 50)
    reps = method_gain_replicates(matrix, "zero_shot", np.ones((1, 50)), null_weight=5.0)
    acc = {k: matrix.values[i].mean() for i, k in enumerate(sorted(TRUE))}
    mu = (5 * acc[("null", "null")] + acc[("generic", "g0")] + acc[("generic", "g1")] + acc[("ape", "a0")]) / 8
    assert reps["ape"][0] == pytest.approx(100 * (acc[("ape", "a0")] - mu) / mu)


def paired_case(tmp_path, n_boot=500, seed="paired"):
    """100 items. Null right on items 0-49; generic g0 right on 0-79; ape a0 right on 0-59 (a subset
    of generic's). Generic beats APE on every resample; APE never beats generic; a method never beats
    itself (tested through an identical copy, adhoc)."""
    n = 100
    def items(k):
        return [1 if j < k else 0 for j in range(n)]
    variants = [
        SyntheticVariant("agnews", "null", "null", "zero_shot", correct=items(50)),
        SyntheticVariant("agnews", "generic", "g0", "zero_shot", correct=items(80)),
        SyntheticVariant("agnews", "ape", "a0", "zero_shot", correct=items(60)),
        SyntheticVariant("agnews", "adhoc", "h0", "zero_shot", correct=items(60)),
    ]
    write_run(tmp_path, "m", variants)
    return aggregate(load_runs([tmp_path]), n_boot=n_boot, seed=seed)


def test_paired_test_on_a_constructed_case(tmp_path):
    result = paired_case(tmp_path)
    tests = result.significance.set_index(["metric", "method_a", "method_b"])
    # mu = (5*.5 + .8 + .6 + .6)/8 = .5625; diff generic - ape = 100*(.8-.6)/.5625 = 35.555556
    row = tests.loc[("zero_shot", "generic", "ape")]
    assert row["diff"] == pytest.approx(100 * 0.2 / 0.5625)
    assert row["p_value"] == pytest.approx(1 / 501)  # no replicate re-centred difference reaches d
    assert tests.loc[("zero_shot", "ape", "generic")]["p_value"] > 0.5
    assert tests.loc[("zero_shot", "ape", "adhoc")]["p_value"] == 1.0  # identical: d = 0 = every d_b
    assert row["ci_low"] > 0
    sig = result.table("significance_zero_shot")
    assert sig.loc["generic", "ape"] == 1 and sig.loc["ape", "generic"] == 0


def test_intervals_are_seeded_and_recorded(tmp_path):
    a = paired_case(tmp_path / "a", n_boot=200, seed="s1")
    b = paired_case(tmp_path / "b", n_boot=200, seed="s1")
    c = paired_case(tmp_path / "c", n_boot=200, seed="s2")
    cols = ["ci_low", "ci_high"]
    assert a.ci[cols].equals(b.ci[cols])
    assert not a.ci[cols].equals(c.ci[cols])
    assert a.summary()["options"]["seed"] == "s1"
    ci = a.ci.set_index("method").loc["generic"]
    assert ci["ci_low"] <= ci["value"] <= ci["ci_high"] and ci["status"] == "ok"


def test_worst_case_definition(tmp_path):
    """Worst case per item = correct clean AND under the perturbation with the same demo seed.
    Seed 0: clean [1,1,0,1], perturbed [1,0,0,1] -> [1,0,0,1] = .5;
    seed 1: clean [1,1,1,0], perturbed [0,1,1,1] -> [0,1,1,0] = .5; WC = .5 (mean perturbed = .625)."""
    v = [
        SyntheticVariant("agnews", "generic", "g0", "few_shot", demo_seed=0, correct=[1, 1, 0, 1]),
        SyntheticVariant("agnews", "generic", "g0", "perturbed", demo_seed=0, correct=[1, 0, 0, 1]),
        SyntheticVariant("agnews", "generic", "g0", "few_shot", demo_seed=1, correct=[1, 1, 1, 0]),
        SyntheticVariant("agnews", "generic", "g0", "perturbed", demo_seed=1, correct=[0, 1, 1, 1]),
    ]
    write_run(tmp_path, "m", v, sweep=sweep_record(n_selections=2))
    result = aggregate(load_runs([tmp_path]), n_boot=0)
    row = result.instructions.set_index("instruction").loc["g0"]
    assert row["worst_case"] == pytest.approx(0.5)
    assert row["perturbed"] == pytest.approx(0.625)


def test_without_samples_the_report_says_so(tmp_path):
    v = [SyntheticVariant("agnews", "null", "null", "zero_shot", value=0.5), SyntheticVariant("agnews", "generic", "g0", "zero_shot", value=0.6)]
    write_run(tmp_path, "m", v, samples=False)
    result = aggregate(load_runs([tmp_path]))
    assert result.ci is None and "no per-sample logs" in result.samples_note
    assert "no-samples" in [i.code for i in result.issues]
    assert "worst_case" not in set(result.gains["metric"])


def test_samples_from_another_run_are_rejected(tmp_path):
    v = [SyntheticVariant("agnews", "null", "null", "zero_shot", correct=[1, 0, 1, 0])]
    write_run(tmp_path, "m", v)
    samples = next((tmp_path / "m").glob("samples_*.jsonl"))
    text = samples.read_text().replace('"acc_per_token": 0.0', '"acc_per_token": 1.0')
    samples.write_text(text)
    result = aggregate(load_runs([tmp_path]), n_boot=50)
    assert "samples-mismatch" in [i.code for i in result.issues]
    assert result.ci is None
