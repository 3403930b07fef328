"""The sensitivity card: each measure on hand-computed examples, against its paper's definition, and end to end."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from instructeval_aggregation import sensitivity_measures as sm
from instructeval_aggregation.loading import load_runs
from instructeval_aggregation.pipeline import aggregate
from instructeval_aggregation.sensitivity_card import build_card
from instructeval_aggregation.testing import SyntheticVariant, sweep_record, write_run

# Three instructions x four items; instruction accuracies 0.75, 0.50, 0.25.
Y3 = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=float)


# ----------------------------------------------------------------------------- hand-computed values


def test_accuracy_measures_by_hand():
    acc = np.array([0.5, 0.7, 0.9])
    assert sm.avgp(acc) == pytest.approx(0.7)
    assert sm.maxp(acc) == pytest.approx(0.9)
    assert sm.spread(acc) == pytest.approx(0.4)
    # Mizrahi et al.: saturation 1 - (0.9 - 0.7) = 0.8, times MaxP 0.9
    assert sm.cps(acc) == pytest.approx(0.72)
    # type-7 quantiles of 0.1..0.5: q25 at position 1 -> 0.2; q05 at 0.2 -> 0.1 + 0.2 * 0.1
    q = sm.quantiles(np.array([0.1, 0.2, 0.3, 0.4, 0.5]))
    assert q == pytest.approx({"q05": 0.12, "q25": 0.2, "q50": 0.3, "q75": 0.4, "q95": 0.48})


def test_pss_by_hand():
    # item 1: values 1,1,0 -> 2 of 3 pairs differ; item 2: 1,0,1 -> 2/3; item 3: 0,0,0 -> 0
    Y = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
    assert sm.prompt_sensi_score(Y) == pytest.approx((2 / 3 + 2 / 3 + 0) / 3)
    # fractional scores (ProSA allows quality scores in [0, 1]): |0.2-0.6| + |0.2-1| + |0.6-1| = 1.6, / 3 pairs
    assert sm.prompt_sensi_score(np.array([[0.2], [0.6], [1.0]])) == pytest.approx(1.6 / 3)


def test_variance_components_by_hand():
    # row means .75 .5 .25, grand .5: MS_inst = 4 * (.0625 + 0 + .0625) / 2 = .25
    # residual sum of squares 0.8333 over (3-1)(4-1) = 6 df: MS_resid = 0.13889
    between, resid = sm.variance_components(Y3)
    assert resid == pytest.approx(5 / 36)
    assert between == pytest.approx((0.25 - 5 / 36) / 4)
    assert sm.instruction_effect_sd(Y3) == pytest.approx(math.sqrt((0.25 - 5 / 36) / 4))
    assert sm.item_noise_sd(Y3) == pytest.approx(math.sqrt(5 / 36 / 4))
    # identical instructions: no instruction effect at all
    same = np.tile(np.array([1, 0, 1, 1, 0], dtype=float), (4, 1))
    assert sm.instruction_effect_sd(same) == 0.0


def test_posix_by_hand():
    LL = np.array([[-1.0, -2.0], [-3.0, -2.0], [-2.0, -2.5]])
    # item 1: |(-1)-(-3)| + |(-1)-(-2)| + |(-3)-(-2)| = 4 over 3 pairs; item 2: 0 + .5 + .5 = 1 over 3
    assert sm.posix_gold(LL) == pytest.approx((4 / 3 + 1 / 3) / 2)


# ----------------------------------------------------------------------------- against the papers' definitions


def _pss_paper(Y: np.ndarray) -> float:
    """ProSA eq. 1-2 written as in the paper: a double loop over prompt pairs per instance."""
    n = Y.shape[0]
    scores = [sum(abs(Y[i, j] - Y[k, j]) for i, k in itertools.combinations(range(n), 2)) / math.comb(n, 2)
              for j in range(Y.shape[1])]
    return sum(scores) / len(scores)


def _posix_paper(LL: np.ndarray) -> float:
    """POSIX eq. 1: psi = 1/(N(N-1)) sum_i sum_j |log P(y_j|x_i) / P(y_j|x_j)| / L_{y_j}, averaged over sets.

    Each item is one intent-aligned set; ``y_j`` is the gold answer for every prompt, so
    ``P(y_j|x_i)`` is ``LL[i, item]``; ``L = 1``.
    """
    n = LL.shape[0]
    psis = []
    for item in range(LL.shape[1]):
        logprob = [[LL[i, item] for _ in range(n)] for i in range(n)]  # logprob[i][j] = log P(y_j | x_i)
        psi = sum(abs(logprob[i][j] - logprob[j][j]) for i in range(n) for j in range(n))
        psis.append(psi / (n * (n - 1)))
    return sum(psis) / len(psis)


def test_pss_and_posix_equal_the_papers_double_sums():
    rng = np.random.default_rng(7)
    Y = (rng.random((9, 40)) < 0.6).astype(float)
    assert sm.prompt_sensi_score(Y) == pytest.approx(_pss_paper(Y), abs=1e-12)
    LL = -rng.gamma(2.0, 3.0, size=(7, 25))
    assert sm.posix_gold(LL) == pytest.approx(_posix_paper(LL), abs=1e-12)


def test_cps_matches_the_paper_on_its_definition_of_saturation():
    # Mizrahi et al. sec. 4: a model at MaxP 0.8 whose average is also 0.8 keeps CPS = MaxP;
    # one whose average falls to 0.4 loses 40% of it.
    assert sm.cps(np.array([0.8, 0.8])) == pytest.approx(0.8)
    assert sm.cps(np.array([0.8, 0.0])) == pytest.approx(0.8 * 0.6)


def test_instruction_sd_separates_noise_from_instruction_effects():
    """The spread grows with the number of instructions when none matters; the SD does not."""
    rng = np.random.default_rng(11)
    n_items = 200
    item_p = rng.uniform(0.2, 0.9, size=n_items)

    def grid(n_inst: int, effect_sd: float) -> np.ndarray:
        logit = np.log(item_p / (1 - item_p))
        shift = rng.normal(0.0, effect_sd, size=(n_inst, 1))
        p = 1 / (1 + np.exp(-(logit + shift)))
        return (rng.random((n_inst, n_items)) < p).astype(float)

    null_small, null_large = grid(5, 0.0), grid(60, 0.0)
    assert sm.spread(null_large.mean(axis=1)) > sm.spread(null_small.mean(axis=1))
    assert sm.instruction_effect_sd(null_large) < 0.02
    assert sm.instruction_effect_sd(null_small) < 0.03
    strong = grid(60, 1.0)
    true_sd = np.std(strong.mean(axis=1))  # observed SD includes noise; the estimate removes it
    est = sm.instruction_effect_sd(strong)
    assert 0.1 < est < true_sd


# ----------------------------------------------------------------------------- the card


def test_card_values_and_bootstrap_are_seeded():
    keys = [("null", "null"), ("generic", "g0"), ("generic", "g1")]
    card = build_card("m", "agnews", "zero_shot", keys, Y3, None, n_boot=200, level=0.9, seed="s1")
    m = card.measures
    assert (m["avgp"].value, m["maxp"].value, m["minp"].value, m["spread"].value) == pytest.approx((50.0, 75.0, 25.0, 50.0))
    assert m["cps"].value == pytest.approx(100 * (1 - 0.25) * 0.75)
    assert m["posix"].value is None and "log-likelihood" in m["posix"].why
    for name in ("avgp", "spread", "pss"):
        assert m[name].ci_low <= m[name].value <= m[name].ci_high
    assert 0.0 <= m["instruction_sd"].ci_low <= m["instruction_sd"].ci_high
    again = build_card("m", "agnews", "zero_shot", keys, Y3, None, n_boot=200, level=0.9, seed="s1")
    other = build_card("m", "agnews", "zero_shot", keys, Y3, None, n_boot=200, level=0.9, seed="s2")
    assert again.as_dict() == card.as_dict()
    assert other.as_dict()["measures"] != card.as_dict()["measures"]
    assert card.as_dict()["bootstrap"]["resampled"] == ["instructions", "items"]


def test_few_shot_card_selectional_from_demo_sets():
    # instruction A: demo sets score 1.0 and 0.5 (SD .3536); B: .5 and .5 (SD 0)
    a = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=float)
    b = np.array([[1, 0, 1, 0], [0, 1, 0, 1]], dtype=float)
    Y = np.vstack([a.mean(axis=0), b.mean(axis=0)])
    card = build_card("m", "agnews", "few_shot", [("g", "a"), ("g", "b")], Y, None, n_boot=0, level=0.95, seed="s",
                      selection_rows=[a, b], permutational=np.array([0.1, math.nan]))
    assert card.measures["selectional"].value == pytest.approx(100 * (math.sqrt(0.125) + 0) / 2)
    assert card.measures["permutational"].value == pytest.approx(10.0)  # NaN instructions left out
    assert card.measures["avgp"].value == pytest.approx(62.5)


def _write_grid(root: Path) -> None:
    # three instructions, 6 items; zero-shot, 2 few-shot demo sets, 2 perturbed
    base = {
        ("null", "null"): [1, 1, 0, 1, 0, 1],
        ("generic", "generic-0"): [1, 0, 0, 1, 0, 1],
        ("adhoc", "adhoc-agnews-00"): [1, 1, 1, 1, 0, 1],
    }
    lls = {"null": [-1.0, -2.0, -3.0, -1.0, -4.0, -0.5], "generic": [-1.5, -2.0, -3.5, -1.0, -4.0, -1.0],
           "adhoc": [-1.0, -1.0, -2.0, -1.0, -3.0, -0.5]}
    variants = []
    for (method, iid), correct in base.items():
        variants.append(SyntheticVariant("agnews", method, iid, "zero_shot", correct=correct, gold_ll=lls[method]))
        for s in (0, 1):
            fs = correct if s == 0 else [1 - c if k == 0 else c for k, c in enumerate(correct)]
            variants.append(SyntheticVariant("agnews", method, iid, "few_shot", s, correct=fs, gold_ll=lls[method]))
            pt = [c if k % 2 else 0 for k, c in enumerate(fs)]
            variants.append(SyntheticVariant("agnews", method, iid, "perturbed", s, correct=pt, gold_ll=lls[method]))
    write_run(root, "tiny", variants, sweep=sweep_record(n_selections=2, n_orderings=0, ordering_demo_seeds=()))


def test_cards_from_a_run(tmp_path):
    _write_grid(tmp_path / "runs")
    result = aggregate(load_runs([str(tmp_path / "runs")]), n_boot=100, seed="card")
    cards = {(c.task, c.setting): c for c in result.cards}
    assert set(cards) == {("agnews", "zero_shot"), ("agnews", "few_shot"), ("agnews", "perturbed")}
    zs = cards[("agnews", "zero_shot")]
    # accuracies 4/6, 3/6, 5/6
    assert zs.measures["spread"].value == pytest.approx(100 * 2 / 6)
    assert zs.measures["avgp"].value == pytest.approx(100 * 12 / 18)
    lls = np.array([[-1.5, -2.0, -3.5, -1.0, -4.0, -1.0], [-1.0, -1.0, -2.0, -1.0, -3.0, -0.5],
                    [-1.0, -2.0, -3.0, -1.0, -4.0, -0.5]])  # adhoc, generic, null: sorted (method, instruction)
    assert zs.measures["posix"].value == pytest.approx(_posix_paper(lls[[1, 0, 2]]))
    fs = cards[("agnews", "few_shot")]
    # every instruction's two demo sets differ on exactly item 0: accuracies differ by 1/6, SD = (1/6)/sqrt(2)
    assert fs.measures["selectional"].value == pytest.approx(100 * (1 / 6) / math.sqrt(2))
    pt = cards[("agnews", "perturbed")]
    # every perturbed item is <= its clean item (the perturbation only zeroes items), so the worst
    # case of each item is its perturbed value and the worst-case accuracy equals the perturbed AvgP
    assert pt.measures["worst_case"].value == pytest.approx(pt.measures["avgp"].value)
    assert pt.measures["worst_case"].value < fs.measures["avgp"].value


def test_cards_without_samples_say_why(tmp_path):
    _write_grid(tmp_path / "runs")
    result = aggregate(load_runs([str(tmp_path / "runs")], samples=False), n_boot=50, use_samples=False)
    zs = next(c for c in result.cards if c.setting == "zero_shot")
    assert zs.measures["spread"].value == pytest.approx(100 * 2 / 6)
    assert zs.measures["pss"].value is None and zs.measures["pss"].why == "no per-sample logs"
    assert zs.as_dict()["bootstrap"]["resampled"] == ["instructions"]


def test_cli_writes_the_card_schema_valid_and_prints_one_line_each(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    _write_grid(tmp_path / "runs")
    out = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "instructeval_aggregation", str(tmp_path / "runs"), "--out", str(out),
                           "--bootstrap", "50", "--no-plots", "--write-back"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # the verdicts come first (verdict.py); 6 rows are too few for an SE
    assert proc.stdout.startswith("tiny agnews [zero-shot]: null 66.7 (on 6 rows: too few for an SE, at least 10); ")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("tiny agnews ") and " across " in ln]
    assert len(lines) == 2  # zero-shot and few-shot; the perturbed card feeds "worst perturbed"
    assert lines[0].startswith("tiny agnews zero-shot: 66.7 [50.0-83.3] across 3 instructions; instruction SD ")
    assert "worst perturbed" in lines[0]
    card = json.loads((out / "sensitivity" / "card.json").read_text())
    schema = json.loads((out / "sensitivity" / "sensitivity_card.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(card)
    assert [c["setting"] for c in card["cards"]] == ["zero_shot", "few_shot", "perturbed"]
    beside = tmp_path / "runs" / "tiny" / "instructeval_sensitivity_tiny.json"
    doc = json.loads(beside.read_text())
    assert doc["instructeval_sensitivity"]["instructeval_agnews"]["zero_shot"] == card["cards"][0]
    assert doc["results"]["instructeval_agnews"]["avgp_zero_shot,none"] == pytest.approx(12 / 18)
    page = (out / "report.html").read_text()
    assert "<h2>Sensitivity cards</h2>" in page and "Instruction-effect SD" in page
    # the written-back file is not a results file: the same folder aggregates to the same cards
    proc2 = subprocess.run([sys.executable, "-m", "instructeval_aggregation", str(tmp_path / "runs"), "--out", str(out),
                            "--bootstrap", "50", "--no-plots"], capture_output=True, text=True)
    assert proc2.returncode == 0, proc2.stderr
    assert json.loads((out / "sensitivity" / "card.json").read_text())["cards"] == card["cards"]


def test_card_json_rejects_what_the_schema_forbids():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(sm.__file__).with_name("sensitivity_card.schema.json")).read_text())
    from instructeval_aggregation.sensitivity_card import card_document

    card = build_card("m", "agnews", "zero_shot", [("a", "1"), ("b", "2"), ("c", "3")], Y3, None, n_boot=0, level=0.95, seed="s")
    doc = card_document([card], options={"seed": "s"})
    jsonschema.Draft202012Validator(schema).validate(doc)
    doc["cards"][0]["measures"]["spread"]["value"] = "wide"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(doc)


def test_intervals_are_centred_on_the_estimate_for_noise_driven_measures():
    """Resampled items duplicate some items, which adds item noise to every replicate: a noise-only
    selectional sensitivity runs ~40% higher in the replicates than in the data. The interval is
    built from the replicates' deviations around their mean, so it still covers the estimate."""
    rng = np.random.default_rng(3)
    sel = [(rng.random((8, 100)) < 0.6).astype(float) for _ in range(20)]  # demo sets do nothing
    Y = np.vstack([s.mean(axis=0) for s in sel])
    card = build_card("m", "agnews", "few_shot", [("g", str(i)) for i in range(20)], Y, None, n_boot=300, level=0.95,
                      seed="s", selection_rows=sel)
    for name in ("selectional", "spread", "pss", "avgp", "q50"):
        m = card.measures[name]
        assert m.ci_low <= m.value <= m.ci_high, name
    sd = card.measures["instruction_sd"]
    assert sd.ci_low == 0.0 <= sd.value <= sd.ci_high  # clipped at 0: no instruction effect


def test_batched_replicates_equal_the_measures_one_by_one():
    """The card's batched replicates give, replicate by replicate, what the documented measures give."""
    from instructeval_aggregation.sensitivity_card import _batch_item, _batch_point

    rng = np.random.default_rng(5)
    Y = (rng.random((4, 7, 30)) < 0.55).astype(float)
    LL = -rng.gamma(2.0, 1.0, size=Y.shape)
    points = _batch_point(Y.mean(axis=2))
    items = _batch_item(Y, LL)
    for b in range(len(Y)):
        acc = Y[b].mean(axis=1)
        one = {"avgp": 100 * sm.avgp(acc), "maxp": 100 * sm.maxp(acc), "minp": 100 * float(acc.min()),
               "spread": 100 * sm.spread(acc), "cps": 100 * sm.cps(acc),
               **{k: 100 * v for k, v in sm.quantiles(acc).items()},
               "pss": sm.prompt_sensi_score(Y[b]), "posix": sm.posix_gold(LL[b]),
               "instruction_sd": 100 * sm.instruction_effect_sd(Y[b]), "item_noise_sd": 100 * sm.item_noise_sd(Y[b])}
        for name, value in one.items():
            batched = points[name][b] if name in points else items[name][b]
            assert batched == pytest.approx(value, abs=1e-9), name


def test_replicates_without_a_two_set_instruction_are_left_out_quietly():
    """Only one of four instructions has two demo sets: replicates that draw none of it have no
    selectional value. They are left out of the interval without a numpy warning on the user's terminal."""
    import warnings

    rng = np.random.default_rng(7)
    sel = [(rng.random((2, 30)) < 0.6).astype(float)] + [(rng.random((1, 30)) < 0.6).astype(float) for _ in range(3)]
    Y = np.vstack([s.mean(axis=0) for s in sel])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        card = build_card("m", "agnews", "few_shot", [("g", str(i)) for i in range(4)], Y, None, n_boot=200,
                          level=0.95, seed="s", selection_rows=sel)
    m = card.measures["selectional"]
    assert m.value == pytest.approx(100 * float(np.std(sel[0].mean(axis=1), ddof=1)))
    # (3/4)^4 of the replicates draw no two-set instruction; the rest hold the interval
    assert m.ci_low is not None and m.ci_low <= m.value <= m.ci_high
