"""Per-instruction metrics: few-shot mean, ddof=1 SDs, both permutational shapes, small groups."""

from __future__ import annotations

import math

import pytest

from instructeval_aggregation import aggregate, load_runs
from instructeval_aggregation.per_instruction import sample_std
from instructeval_aggregation.testing import SyntheticVariant, sweep_record, write_run


def fs(seed, value, iid="g0", method="generic", task="agnews"):
    return SyntheticVariant(task, method, iid, "few_shot", demo_seed=seed, value=value)


def order(seed, o, value, iid="g0", method="generic", task="agnews"):
    return SyntheticVariant(task, method, iid, "ordering", demo_seed=seed, order_seed=o, value=value)


def row(result, iid="g0"):
    return result.instructions.set_index("instruction").loc[iid]


def test_sample_std_is_ddof_one():
    """[.5, .6, .7]: mean .6, squares .01 + 0 + .01 = .02; ddof=1: sqrt(.02/2) = 0.1; ddof=0: sqrt(.02/3)."""
    assert sample_std([0.5, 0.6, 0.7]) == pytest.approx(0.1)
    assert sample_std([0.5, 0.6, 0.7], ddof=0) == pytest.approx(math.sqrt(0.02 / 3))
    assert math.isnan(sample_std([0.5]))
    assert math.isnan(sample_std([0.5], ddof=0))  # one value is never a 0 SD
    assert math.isnan(sample_std([]))


def test_few_shot_mean_and_selectional_sd(tmp_path):
    """FS = (.5 + .6 + .7)/3 = .6; selectional = 0.1 -> table cell 100*SD = 10.0."""
    variants = [fs(0, 0.5), fs(1, 0.6), fs(2, 0.7), SyntheticVariant("agnews", "generic", "g0", "zero_shot", value=0.4)]
    write_run(tmp_path, "m", variants, samples=False, sweep=sweep_record(n_selections=3))
    result = aggregate(load_runs([tmp_path]), n_boot=0)
    r = row(result)
    assert r["few_shot"] == pytest.approx(0.6)
    assert r["selectional"] == pytest.approx(0.1)
    assert r["zero_shot"] == pytest.approx(0.4)
    assert result.table("sensitivity_selectional").loc["generic", "agnews"] == pytest.approx(10.0)


def test_permutational_one_set_many_orderings(tmp_path):
    """The paper's shape (1 demo set x P orderings): [.5, .7, .6, .6], mean .6,
    squares .01 + .01 + 0 + 0 = .02, SD = sqrt(.02/3) = 0.0816497."""
    variants = [order(0, o, v) for o, v in enumerate([0.5, 0.7, 0.6, 0.6], 1)]
    write_run(tmp_path, "m", variants, samples=False, sweep=sweep_record(ordering_demo_seeds=[0], n_orderings=4))
    r = row(aggregate(load_runs([tmp_path]), n_boot=0))
    assert r["permutational"] == pytest.approx(math.sqrt(0.02 / 3))
    assert r["n_order_sets"] == 1 and r["n_orderings"] == 4


def test_permutational_sets_times_orderings(tmp_path):
    """The original's shape (sets x orderings), here 2 x 3:
    set 0 [.5, .6, .7] -> SD 0.1; set 1 [.4, .4, .7] -> mean .5, squares .01+.01+.04 = .06, SD sqrt(.03);
    PS = (0.1 + 0.1732051) / 2 = 0.1366025."""
    variants = [order(0, o, v) for o, v in enumerate([0.5, 0.6, 0.7], 1)]
    variants += [order(1, o, v) for o, v in enumerate([0.4, 0.4, 0.7], 1)]
    write_run(tmp_path, "m", variants, samples=False, sweep=sweep_record(ordering_demo_seeds=[0, 1], n_orderings=3))
    r = row(aggregate(load_runs([tmp_path]), n_boot=0))
    assert r["permutational"] == pytest.approx((0.1 + math.sqrt(0.03)) / 2)
    assert r["n_order_sets"] == 2


def test_ordering_sets_outside_the_sweep_are_ignored_with_a_warning(tmp_path):
    variants = [order(0, o, v) for o, v in enumerate([0.5, 0.6, 0.7], 1)]
    variants += [order(3, o, v) for o, v in enumerate([0.1, 0.9], 1)]
    write_run(tmp_path, "m", variants, samples=False, sweep=sweep_record(ordering_demo_seeds=[0], n_orderings=3))
    result = aggregate(load_runs([tmp_path]), n_boot=0)
    assert row(result)["permutational"] == pytest.approx(0.1)
    assert "ordering-extra" in [i.code for i in result.issues]


def test_groups_too_small_for_an_sd_are_nan_and_warned(tmp_path):
    """One few-shot seed: selectional NaN (not 0) with a warning; a demo set with one ordering is
    left out of the permutational mean with a warning; no usable set -> NaN."""
    variants = [fs(0, 0.5), order(0, 1, 0.5)]
    write_run(tmp_path, "m", variants, samples=False, sweep=sweep_record(n_selections=1, n_orderings=1))
    result = aggregate(load_runs([tmp_path]), n_boot=0)
    r = row(result)
    assert math.isnan(r["selectional"]) and math.isnan(r["permutational"])
    codes = {i.code for i in result.issues if i.level == "warning"}
    assert {"small-group-selectional", "small-group-permutational"} <= codes
    with pytest.raises(Exception) as err:
        aggregate(load_runs([tmp_path]), n_boot=0, strict=True)
    assert "small-group" in str(err.value)


def test_incomplete_sweeps_are_warned(tmp_path):
    """An instruction with 2 of the sweep's 3 few-shot seeds, and one lacking zero-shot, are listed."""
    variants = [fs(0, 0.5), fs(1, 0.6), fs(2, 0.7), fs(0, 0.5, iid="g1"), fs(1, 0.5, iid="g1")]
    variants.append(SyntheticVariant("agnews", "generic", "g0", "zero_shot", value=0.4))
    write_run(tmp_path, "m", variants, samples=False, sweep=sweep_record(n_selections=3))
    result = aggregate(load_runs([tmp_path]), n_boot=0)
    messages = " ".join(i.message for i in result.issues)
    assert "generic/g1 (few_shot: 2 of 3)" in messages
    assert "generic/g1 (zero_shot)" in messages


def test_primary_metric_rule(tmp_path):
    """acc_per_token when every variant has it; acc (with a warning) otherwise; --metric forces."""
    with_pt = [SyntheticVariant("agnews", "generic", "g0", "zero_shot", value=0.5, metrics={"acc": 0.9})]
    without = [SyntheticVariant("boolq", "generic", "g0", "zero_shot", value=0.5, metrics={"acc": 0.7, "acc_per_token": None})]
    gqa = [SyntheticVariant("triviaqa", "generic", "g0", "zero_shot", value=0.3)]
    write_run(tmp_path, "m", with_pt + without + gqa, samples=False)
    result = aggregate(load_runs([tmp_path]), n_boot=0)
    chosen = result.metric_choice.set_index("task")["metric"]
    assert chosen["agnews"] == "acc_per_token" and chosen["boolq"] == "acc" and chosen["triviaqa"] == "quasi_exact_match"
    zs = result.instructions.set_index("task")["zero_shot"]
    assert zs["agnews"] == 0.5 and zs["boolq"] == 0.7 and zs["triviaqa"] == 0.3
    assert "metric-fallback" in [i.code for i in result.issues]
    forced = aggregate(load_runs([tmp_path]), n_boot=0, metric="acc")
    assert forced.instructions.set_index("task")["zero_shot"]["agnews"] == 0.9
