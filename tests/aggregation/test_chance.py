"""The chance test: the stock score against always giving the rows' most frequent gold answer."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from instructeval_aggregation.chance import ABOVE_P, LABEL_SET, chance_of, choice_answers, majority


def test_the_rate_is_the_most_frequent_gold_answer_on_the_same_rows_and_the_p_value_its_binomial_tail():
    gold = ["a"] * 30 + ["b"] * 50 + ["c"] * 20
    y = np.array([1.0] * 62 + [0.0] * 38)
    c = chance_of(y, gold)
    assert c.rate == 0.5 and c.answer == "b"
    assert c.p_value == pytest.approx(binom.sf(61, 100, 0.5))
    assert c.state == ("above chance" if c.p_value < ABOVE_P else "at chance")


def test_a_row_accepting_several_answers_counts_for_each():
    assert majority([{"yes", "y"}, {"y"}, {"no"}]) == ("y", 2)


def test_free_form_answers_have_no_rate_and_a_floor_below_ten_points():
    gold = [f"answer {i}" for i in range(LABEL_SET + 5)]
    low = chance_of(np.array([1.0] + [0.0] * (LABEL_SET + 4)), gold)
    assert math.isnan(low.rate) and low.state == "at a floor" and low.clause().startswith("at a floor: 4.0")
    high = chance_of(np.array([1.0] * 10 + [0.0] * (LABEL_SET - 5)), gold)
    assert high.state == "no chance rate" and not high.below and high.clause() == ""
    assert chance_of(np.zeros(30), None, floor_score=0.05).state == "at a floor"


def test_what_the_model_does_comes_from_its_answers_where_known():
    gold = ["x", "y", "z", "x"] * 10
    said = ["x"] * 40
    c = chance_of(np.array([float(g == "x") for g in gold]), gold, predicted=said)
    assert c.behaviour() == 'answers "x" on 40 of 40 rows' and c.state == "at chance"


def test_choice_answers_name_shared_choices_by_text_and_per_row_choices_by_position():
    from instructeval_tasks.estimation.choice_scores import ChoiceScores

    shared = ChoiceScores(np.array([0, 1]), [np.array([-1.0, -2.0]), np.array([-3.0, -0.5])],
                          [(" no", " yes"), (" no", " yes")], np.array([0, 0]))
    assert choice_answers(shared, "acc") == (["no", "no"], ["no", "yes"])
    endings = ChoiceScores(np.array([0, 1]), [np.array([-10.0, -9.0]), np.array([-1.0, -5.0])],
                           [(" a long ending", " b"), (" c", " d")], np.array([0, 1]))
    # acc picks the higher log-likelihood; acc_norm divides by the continuation's characters
    assert choice_answers(endings, "acc") == (["choice 1", "choice 2"], ["choice 2", "choice 1"])
    assert choice_answers(endings, "acc_norm") == (["choice 1", "choice 2"], ["choice 1", "choice 1"])
    assert choice_answers(shared, "acc_per_token")[1] is None  # its rule needs token counts: no answers named


def test_a_tie_for_the_most_frequent_answer_names_the_one_the_model_gives():
    assert majority(["a", "b", "a", "b"]) == ("a", 2)
    assert majority(["a", "b", "a", "b"], prefer="b") == ("b", 2)
    c = chance_of(np.array([0.0, 1.0, 0.0, 1.0] * 5), ["a", "b", "a", "b"] * 5, predicted=["b"] * 20)
    assert c.answer == "b" and c.clause().startswith('at chance: answers "b" on 20 of 20 rows; always answering "b"')
