"""Golden tests of the Instruction Induction scoring: each case computed by hand from the rules of the
original ``evaluate.py`` (normalize_prediction, get_*_score, get_multi_answer_*), then, when the
reference copy is present, the same functions compared with the original on every answer of the data."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from instructeval_tasks.ii.metrics import (
    contains_score, em_score, exact_set_score, f1_score, normalize_prediction, score,
)
from instructeval_tasks.ii.names import INDUCTION_TASKS, TASK_TO_ANSWERS, TASK_TO_METRIC, metric_of

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "instruction_induction"


# ------------------------------------------------------------------ normalisation, step by step

@pytest.mark.parametrize(
    "raw, expected",
    [
        # strip, lower-case, drop punctuation
        (" Unfortunate!", "unfortunate"),
        # ' and ' -> ' ' before anything else (so "cats and dogs" == "cats dogs")
        ("cats and dogs", "cats dogs"),
        # 'Sentence 1:' / 'Sentence 2:' -> ' ' (then the double spaces stay: no whitespace collapsing)
        ("Sentence 1: a Sentence 2: b", "a   b"),
        # strip() happens before the first-line cut: a leading newline does not empty the prediction
        ("\n\nhot\ncold", "hot"),
        # only the text before the first '.' is kept
        ("The artist was mentioned. By whom", "the artist was mentioned"),
        # '-' becomes a space, then the rest of string.punctuation is deleted
        ("ninety-four", "ninety four"),
        ("3 - probably", "3   probably"),
        # apostrophes are deleted, not replaced
        ("What's up?", "whats up"),
        # ' and ' needs spaces on both sides; 'and' at the start stays
        ("and then", "and then"),
        # an empty prediction stays empty
        ("", ""),
        # cut at '.' happens before punctuation removal: '4.5' -> '4'
        ("4.5", "4"),
    ],
)
def test_normalize_prediction(raw, expected):
    assert normalize_prediction(raw) == expected


# ------------------------------------------------------------------ single-answer rules

def test_exact_match():
    assert em_score(" Unfortunate.\nInput: x", "unfortunate") is True
    assert em_score("not fortunate", "unfortunate") is False
    # the answer is normalised too: "ninety-four" == "Ninety four"
    assert em_score("Ninety four", "ninety-four") is True


def test_exact_set():
    # taxonomy_animal: order and repetition do not matter, every word does
    assert exact_set_score("bear, kangaroo, beetle, bird", "beetle, bear, kangaroo, bird") == 1
    assert exact_set_score("bear bear kangaroo beetle bird", "beetle, bear, kangaroo, bird") == 1
    assert exact_set_score("bear, kangaroo", "beetle, bear, kangaroo, bird") == 0
    assert exact_set_score("bear, kangaroo, beetle, bird, cat", "beetle, bear, kangaroo, bird") == 0


def test_contains_whole_words_only():
    assert contains_score("I would say process, really", "process") == 1
    assert contains_score("processing", "process") == 0          # \b requires a word boundary
    assert contains_score("The Process.", "process") == 1         # both normalised
    # multi-word answers match as a phrase: "a b" in "x a b y" but not "a x b"
    assert contains_score("x a b y", "a b") == 1
    assert contains_score("a x b", "a b") == 0


def test_f1_by_hand():
    # prediction tokens [involve, going, up, fast], answer [involve, going, up]: overlap 3
    # P = 3/4, R = 3/3, F1 = 2 * 0.75 * 1 / 1.75 = 6/7
    assert f1_score("involve going up fast", "involve going up.") == pytest.approx(6 / 7)
    # multiset overlap: prediction [a, a, b], answer [a, b, b]: overlap {a:1, b:1} = 2, P = R = 2/3
    assert f1_score("a a b", "a b b") == pytest.approx(2 / 3)
    assert f1_score("nothing shared", "involve going up") == 0
    assert f1_score("", "involve going up") == 0


# ------------------------------------------------------------------ multi-answer rules

def test_multi_answer_rules():
    # em / es / contains: 1 if any answer scores 1
    assert score("em", "Platz", ["Position", "Platz", "Ort"]) == 1
    assert score("em", "Haus", ["Position", "Platz", "Ort"]) == 0
    assert score("es", "b a", ["a c", "a b"]) == 1
    assert score("contains", "well, a fine procedure", ["process", "procedure"]) == 1
    assert score("contains", "no match here", ["process", "procedure"]) == 0
    # f1: the maximum over answers
    # vs "involve vertical movement": overlap {involve} -> P=1/3, R=1/3, F1=1/3
    # vs "involve going up": overlap {involve, up} -> P=2/3, R=2/3, F1=2/3
    assert score("f1", "involve lifting up", ["involve vertical movement.", "involve going up."]) == pytest.approx(2 / 3)


def test_score_rejects_unknown_metric_and_empty_answers():
    with pytest.raises(ValueError, match="unknown Instruction Induction metric"):
        score("bleu", "a", ["a"])
    with pytest.raises(ValueError, match="no correct answers"):
        score("em", "a", [])


def test_task_tables_match_the_original():
    assert len(INDUCTION_TASKS) == 24
    assert {t: metric_of("ii_" + t.replace("-", "_")) for t in TASK_TO_METRIC} == TASK_TO_METRIC
    assert metric_of("instructeval_ii_antonyms") == "em"
    assert TASK_TO_ANSWERS["word_in_context"] == "possible_outputs"


# ------------------------------------------------------------------ parity with the original code

def _reference():
    path = REFERENCE / "evaluate.py"
    if not path.is_file():
        pytest.skip(f"reference code not found at {path}")
    spec = importlib.util.spec_from_file_location("ii_reference_evaluate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tables_and_normalisation_equal_the_reference():
    ref = _reference()
    assert tuple(ref.INDUCTION_TASKS) == INDUCTION_TASKS
    assert ref.TASK_TO_METRIC == TASK_TO_METRIC
    for raw in ["", " A-b and c.\nd", "Sentence 1: x. Sentence 2: y", "What's UP?!", "\n4.5 and 6"]:
        assert normalize_prediction(raw) == ref.normalize_prediction(raw)


def test_every_metric_equals_the_reference_on_the_data(shared_data_dir):
    """All four rules on real answers against derived predictions: the answer itself, a case/punctuation
    variant, a longer sentence containing it, a truncated and an unrelated one."""
    ref = _reference()
    multi = {"em": ref.get_multi_answer_em, "es": ref.get_multi_answer_exact_set,
             "contains": ref.get_multi_answer_contains, "f1": ref.get_multi_answer_f1}
    from instructeval_tasks.ii.examples import build_rows
    from instructeval_tasks.ii.source import local_path, read_examples

    compared = 0
    for task in INDUCTION_TASKS:
        path = local_path(shared_data_dir, "execute", task)
        rows = build_rows(task, read_examples(path, task), str(path))
        for row in rows[:15]:
            answers = row["answers"]
            first = answers[0]
            words = first.split()
            predictions = [first, f" {first.upper()}!", f"I think {first} is right.\nMore", " ".join(words[:1]),
                           "an unrelated reply", row["input"]]
            for prediction in predictions:
                for metric, fn in multi.items():
                    assert score(metric, prediction, answers) == fn(prediction, answers), (task, metric, prediction)
                    compared += 1
    assert compared > 2000
