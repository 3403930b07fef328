"""Super-NaturalInstructions scoring: hand-computed per-instance values from the benchmark's rules
(``normalize_answer``, ROUGE-L F with the Porter stemmer, the maximum over acceptable outputs) and,
when the reference copy of the benchmark's ``evaluation.py`` is present in ``../shared``, the same
instances compared with it value for value."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

from instructeval_tasks.ni.metrics import exact_match, normalize_answer, rouge_l, score

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "natural_instructions" / "evaluation.py"

# (prediction, acceptable outputs, exact match, ROUGE-L F): each value worked out by hand.
CASES = [
    # punctuation and case: "Entailment." and "entailment" normalise alike; ROUGE drops "." too
    ("Entailment.", ["entailment"], 1.0, 1.0),
    ("  The   CAT!", ["the cat"], 1.0, 1.0),
    # articles are kept: "a cat" != "cat"; ROUGE: LCS 1, P 1/2, R 1 -> F 2/3
    ("a cat", ["cat"], 0.0, 2 / 3),
    # stemming counts for ROUGE only: run|dog on both sides -> F 1, the strings differ
    ("running dogs", ["run dog"], 0.0, 1.0),
    # the maximum over acceptable outputs, for each metric on its own
    ("yes", ["No", "Yes."], 1.0, 1.0),
    ("the red car", ["red", "the red bus"], 0.0, 2 / 3),
    # an apostrophe is deleted by normalize_answer but splits a token for ROUGE: [cat] vs [cat, s]
    ("cats", ["cat's"], 1.0, 2 / 3),
    # a hyphen likewise: "email" == "email", but [email] vs [e, mail] share nothing
    ("email", ["e-mail"], 1.0, 0.0),
    # an empty (missing) prediction scores 0 on both
    ("", ["x"], 0.0, 0.0),
    # trailing generation after a space: LCS 2 of 2 reference tokens, 4 prediction tokens -> F 2/3
    ("The answer is N", ["answer N"], 0.0, 2 / 3),
]


@pytest.mark.parametrize("prediction, outputs, em, rouge", CASES)
def test_per_instance_values_by_hand(prediction, outputs, em, rouge):
    got = score(prediction, outputs)
    assert got["exact_match"] == em
    assert got["rougeL"] == pytest.approx(rouge)


def test_normalize_answer_keeps_articles_and_collapses_whitespace():
    assert normalize_answer(" A  Tale,\tof the\nCity! ") == "a tale of the city"
    assert normalize_answer("'\"!?") == ""


def test_an_instance_needs_an_output():
    with pytest.raises(ValueError, match="at least one acceptable output"):
        score("x", [])


@pytest.fixture(scope="module")
def reference():
    """The benchmark's evaluation.py, imported with its two import-time needs stubbed: ``rouge`` is
    ``rouge_score`` (the benchmark vendors it under that name) and ``transformers.AutoTokenizer``
    (GPT-2's tokenizer, used only by the cross-lingual track, which is not scored here)."""
    if not REFERENCE.is_file():
        pytest.skip(f"reference copy not present: {REFERENCE}")
    from rouge_score import rouge_scorer

    rouge_stub = types.ModuleType("rouge")
    rouge_stub.rouge_scorer = rouge_scorer
    transformers_stub = types.ModuleType("transformers")
    transformers_stub.AutoTokenizer = types.SimpleNamespace(
        from_pretrained=lambda *a, **k: types.SimpleNamespace(tokenize=lambda s: s.split()))
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "rouge", rouge_stub)
        patch.setitem(sys.modules, "transformers", transformers_stub)
        spec = importlib.util.spec_from_file_location("superni_reference_evaluation", REFERENCE)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("prediction, outputs, em, rouge", CASES)
def test_per_instance_values_equal_the_reference(reference, prediction, outputs, em, rouge):
    ref_em = reference.metric_max_over_ground_truths(reference.exact_match, prediction, outputs)
    ref_rouge = reference.metric_max_over_ground_truths(reference.rouge, prediction, outputs)
    assert score(prediction, outputs) == {"exact_match": float(ref_em), "rougeL": ref_rouge}
    assert exact_match(prediction, outputs[0]) == float(reference.exact_match(prediction, outputs[0]))
    assert rouge_l(prediction, outputs[0]) == reference.rouge(prediction, outputs[0])


def test_task_means_equal_the_reference_compute_metrics(reference):
    predictions = [case[0] for case in CASES]
    outputs = [case[1] for case in CASES]
    ours = [score(p, o) for p, o in zip(predictions, outputs)]
    mean = {m: round(100.0 * sum(s[m] for s in ours) / len(ours), 4) for m in ("exact_match", "rougeL")}
    assert mean == reference.compute_metrics(predictions, outputs)
