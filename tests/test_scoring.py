"""Scoring rules (protocol.md §3): HELM quasi-exact match, continuation token counts, decision rules."""

from __future__ import annotations

import pytest
from lm_eval.api.model import TemplateLM

from instructeval_tasks.preview import build_task, render_prompt
from instructeval_tasks.scoring import choice_predictions, continuation_token_count, normalize_answer, quasi_exact_match

# ------------------------------------------------------------------------------ HELM quasi-exact match


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Paris", "paris"),
        ("  The Eiffel-Tower, Paris! ", "eiffeltower paris"),
        ("the Beatles", "beatles"),
        ("An apple a day", "apple day"),
        ("theatre another anthem", "theatre another anthem"),  # articles are whole words only
        ("U.S.A.", "usa"),
        ("a.m.", "am"),  # punctuation goes first, then "am" is no article
        ("The-The", "thethe"),
        ("\tNew\n\nYork  City ", "new york city"),
        ("don’t", "don’t"),  # only ASCII string.punctuation is removed
        ("The", ""),
        ("", ""),
        ("Paris</s>", "pariss"),
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


@pytest.mark.parametrize(
    "golds,prediction,expected",
    [
        (["Paris"], "Paris", 1.0),
        (["Paris"], " paris", 1.0),  # case, whitespace
        (["Paris"], "Paris.", 1.0),  # punctuation
        (["The Nile"], "nile", 1.0),  # articles
        (["Nile"], "the  Nile ", 1.0),
        (["Leonardo da Vinci", "da Vinci"], "Da Vinci!", 1.0),  # any of the golds
        (["Leonardo da Vinci", "da Vinci"], "Vinci", 0.0),
        (["Paris"], "Paris, France", 0.0),  # no contains-match
        (["Paris"], "Paris</s>", 0.0),  # the original's EOS leftovers do not match
        (["Paris"], "Paris <|endoftext|>", 0.0),
        (["Paris"], "", 0.0),
        ([1950], "1950", 1.0),  # non-string golds go through str()
        ([True], "true", 1.0),
        ([3.5], "3.5", 1.0),  # str(3.5) and "3.5" both normalise to "35"
        ([3.5], "3.50", 0.0),
        ("Paris", "paris", 1.0),  # a single string gold is one gold, not characters
        ("Paris", "p", 0.0),
        (("Tokyo", "Edo"), "edo", 1.0),
        (["seven", "7"], "7", 1.0),
        (["the"], "a", 1.0),  # both normalise to ""
    ],
)
def test_quasi_exact_match(golds, prediction, expected):
    assert quasi_exact_match(golds, prediction) == expected


def test_quasi_exact_match_returns_floats():
    assert isinstance(quasi_exact_match(["a b"], "a b"), float)
    assert isinstance(quasi_exact_match(["x"], "y"), float)


# ------------------------------------------------------------------------------ token counts


class _HarnessEncoder:
    """The harness's own context/continuation split (``TemplateLM._encode_pair``) over a tokenizer."""

    backend = "causal"

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def tok_encode(self, text, **kwargs):
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def scored_tokens(self, context, continuation):
        return TemplateLM._encode_pair(self, context, continuation)[1]


@pytest.mark.parametrize(
    "context,continuation,expected",
    [
        ("News: A\nCategory:", " World", ["ĠWorld"]),
        ("News: A\nCategory:", " Sports", ["ĠSports"]),
        ("News: A\nCategory:", " Sci/Tech", ["ĠSci", "/", "Tech"]),
        ("Premise: x\nHypothesis: y\nRelation:", " Contradict", ["ĠContradict"]),
        # trailing spaces of the context move into the continuation
        ("Category: ", "World", ["ĠWorld"]),
        ("Category:  ", "World", ["Ġ", "ĠWorld"]),
        # the continuation merges with the context's last token: the split is made on the whole
        ("Answer: Tr", "ue test", ["st"]),
        ("Category: Sci", "/Tech", ["/", "Tech"]),
    ],
)
def test_continuation_token_count_matches_the_harness_split(tiny_tokenizer, context, continuation, expected):
    scored = _HarnessEncoder(tiny_tokenizer).scored_tokens(context, continuation)
    assert tiny_tokenizer.convert_ids_to_tokens(scored) == expected
    assert continuation_token_count(tiny_tokenizer, context, continuation) == len(expected)


def test_merge_differs_from_tokenizing_the_continuation_alone(tiny_tokenizer):
    alone = tiny_tokenizer("ue test", add_special_tokens=False)["input_ids"]
    assert len(alone) == 3
    assert continuation_token_count(tiny_tokenizer, "Answer: Tr", "ue test") == 1
    # the original's span: tok(prompt + v)[len(tok(prompt.rstrip())):]  (protocol.md §3.1 step 4)
    prompt = "Category: "
    whole = tiny_tokenizer(prompt + "World", add_special_tokens=False)["input_ids"]
    label_idx = len(tiny_tokenizer(prompt.rstrip(), add_special_tokens=False)["input_ids"])
    assert continuation_token_count(tiny_tokenizer, prompt, "World") == len(whole) - label_idx == 1


def test_fully_merged_continuation_counts_one_token(tiny_tokenizer):
    # The harness scores no token here (log-likelihood 0); the count is clamped to 1, never 0.
    assert _HarnessEncoder(tiny_tokenizer).scored_tokens("Category: Wor", "ld") == []
    assert continuation_token_count(tiny_tokenizer, "Category: Wor", "ld") == 1


# ------------------------------------------------------------------------------ decision rules


def test_ties_go_to_the_first_index():
    preds = choice_predictions([-1.0, -1.0, -1.0], ["a", "b", "c"], [1, 1, 1])
    assert preds == {"pred": 0, "pred_norm": 0, "pred_per_token": 0}
    preds = choice_predictions([-3.0, -2.0, -4.0, -2.0], ["aa", "bb", "cc", "dd"], [2, 2, 2, 2])
    assert preds == {"pred": 1, "pred_norm": 1, "pred_per_token": 1}
    # per-token tie between different raw scores: -2/1 == -4/2
    assert choice_predictions([-2.0, -4.0], ["x", "y"], [1, 2])["pred_per_token"] == 0
    assert choice_predictions([-4.0, -2.0], ["x", "y"], [2, 1])["pred_per_token"] == 0


def test_per_token_rule_differs_from_the_sum_rule():
    # " World" (1 token, ll -3) vs " Sci/Tech" (3 tokens, ll -4.5): the sum prefers World, the mean
    # per-token NLL (-1.5 vs -3) prefers Sci/Tech -- the multi-token bias of protocol.md §3.1.
    preds = choice_predictions([-3.0, -4.5], ["World", "Sci/Tech"], [1, 3])
    assert preds["pred"] == 0
    assert preds["pred_per_token"] == 1
    assert preds["pred_norm"] == 1  # -3/5 = -0.6 vs -4.5/8 = -0.5625


def test_char_norm_differs_from_per_token():
    # "ab" (2 chars, 2 tokens, ll -2) vs "abcdefgh" (8 chars, 1 token, ll -3)
    preds = choice_predictions([-2.0, -3.0], ["ab", "abcdefgh"], [2, 1])
    assert preds == {"pred": 0, "pred_norm": 1, "pred_per_token": 0}


def test_no_per_token_prediction_without_counts():
    assert choice_predictions([-1.0, -2.0], ["a", "b"], None) == {"pred": 0, "pred_norm": 0}


# ------------------------------------------------------------------------------ through the task


def test_task_reports_acc_per_token_with_a_score_tokenizer(tiny_data_dir, tiny_model_dir):
    task = build_task("agnews", {"data_dir": str(tiny_data_dir), "score_tokenizer": str(tiny_model_dir)}, 0)
    doc = task.eval_docs[3]  # "Telescope spots new exoplanet.", label 3 (Sci/Tech)
    _context, conts = render_prompt(task, 3)  # builds the requests, which records the token counts
    assert conts == [" World", " Sports", " Business", " Sci/Tech"]
    results = [(-3.0, False), (-5.0, False), (-5.0, False), (-4.5, False)]
    assert task.process_results(doc, results) == {"acc": 0.0, "acc_norm": 1.0, "acc_per_token": 1.0}
    meta = task.dump_config()["metadata"]
    assert meta["score_tokenizer"] == str(tiny_model_dir)


def test_a_classification_task_records_its_labels_token_counts(tiny_data_dir, tiny_model_dir):
    """What the aggregation's choice-score estimates divide each label's log-likelihood by."""
    task = build_task("agnews", {"data_dir": str(tiny_data_dir), "score_tokenizer": str(tiny_model_dir)}, 0)
    assert task.dump_config()["metadata"]["choice_token_counts"] is None  # no request built yet
    context, conts = render_prompt(task, 3)
    render_prompt(task, 4)
    expected = {c: continuation_token_count(_tok(tiny_model_dir), context, c) for c in conts}
    assert task.dump_config()["metadata"]["choice_token_counts"] == expected
    assert expected[" Sci/Tech"] > expected[" World"]  # the per-token rule divides by different counts


def test_a_prompt_is_tokenised_once_for_its_labels_and_once_for_both_request_builds(tiny_data_dir, tiny_model_dir):
    """The window check builds every request before the harness builds it again: the counts are the
    same, and the second build tokenises nothing; the first tokenises the prompt once, not per label."""
    task = build_task("agnews", {"data_dir": str(tiny_data_dir), "score_tokenizer": str(tiny_model_dir)}, 0)
    calls: list[str] = []
    tokenizer = task._tokenizer

    def counting(text, **kwargs):
        calls.append(text)
        return tokenizer(text, **kwargs)

    task._tokenizer = counting
    doc = task.eval_docs[3]
    context = task.fewshot_context(doc, 0)
    first = task.construct_requests(doc, context, metadata=("agnews", 3, 1))
    assert len(calls) == 1 + 4  # the prompt, then prompt + each of the four labels
    counts = task._token_counts[task._doc_key(doc)]
    assert counts == [continuation_token_count(tokenizer, r.arguments[0], r.arguments[1]) for r in first]
    task._token_counts.clear()
    task.construct_requests(doc, context, metadata=("agnews", 3, 1))
    assert len(calls) == 5 and task._token_counts[task._doc_key(doc)] == counts


def test_a_multiple_choice_task_records_no_label_token_counts(tiny_data_dir, tiny_model_dir):
    task = build_task("hellaswag", {"data_dir": str(tiny_data_dir), "score_tokenizer": str(tiny_model_dir)}, 0)
    render_prompt(task, 0)
    assert task.dump_config()["metadata"]["choice_token_counts"] is None  # its choices differ per item


def test_task_without_tokenizer_drops_acc_per_token(tiny_data_dir):
    task = build_task("imdb", {"data_dir": str(tiny_data_dir)}, 0)
    doc = task.eval_docs[0]  # label 1
    render_prompt(task, 0)
    assert task.process_results(doc, [(-1.0, False), (-2.0, False)]) == {"acc": 0.0, "acc_norm": 0.0}
    metric_names = [m["metric"] for m in task.config.metric_list]
    assert "acc_per_token" not in metric_names and {"acc", "acc_norm"} <= set(metric_names)


def test_task_mcq_per_token(tiny_data_dir, tiny_model_dir):
    task = build_task("hellaswag", {"data_dir": str(tiny_data_dir), "score_tokenizer": str(tiny_model_dir)}, 0)
    doc = task.eval_docs[0]  # gold 0: " scrubs it with a sponge."
    _context, conts = render_prompt(task, 0)
    counts = [continuation_token_count(_tok(tiny_model_dir), _context, c) for c in conts]
    # give every ending the same mean per-token log-likelihood except the gold, slightly better
    results = [(-1.0 * n, False) for n in counts]
    results[0] = (-0.9 * counts[0], False)
    scores = task.process_results(doc, results)
    assert scores["acc_per_token"] == 1.0


def _tok(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


@pytest.mark.parametrize(
    "task_name,doc,generation,expected",
    [
        ("nq_open", 1, " Bell", 1.0),
        ("nq_open", 1, "alexander graham bell.", 1.0),
        ("nq_open", 1, "Graham", 0.0),
        ("triviaqa", 0, "Chicago, Illinois", 1.0),
        ("triviaqa", 6, "people's republic of china", 1.0),
        ("triviaqa", 0, "Chicago</s>", 0.0),
    ],
)
def test_task_quasi_exact_match(tiny_data_dir, task_name, doc, generation, expected):
    task = build_task(task_name, {"data_dir": str(tiny_data_dir)}, 0)
    assert task.process_results(task.eval_docs[doc], [generation]) == {"quasi_exact_match": expected}


# ------------------------------------------------------------------------------ the original's tie order

# The candidate order of the original's templates (``label_map`` of configs/default_prompts/*.j2):
# its ``np.argmin`` gives an exact tie to the first. MCQ candidates are the per-item choices in
# item order (label_map keys 0..3).
ORIGINAL_CANDIDATE_ORDER = {
    "agnews": ["World", "Sports", "Business", "Sci/Tech"],
    "anli": ["Entail", "Neutral", "Contradict"],
    "boolq": ["True", "False"],
    "imdb": ["Negative", "Positive"],
    "emotion": ["Anger", "Joy", "Optimism", "Sadness"],
}
CHOICE_TASKS = ["agnews", "anli", "boolq", "imdb", "emotion", "cosmosqa", "hellaswag"]


def test_argmax_in_order():
    from instructeval_tasks.scoring import argmax_in_order

    assert argmax_in_order([-1.0, -1.0]) == 0
    assert argmax_in_order([-1.0, -1.0], (1, 0)) == 1
    assert argmax_in_order([-2.0, -1.0], (1, 0)) == 1
    assert argmax_in_order([-1.0, -2.0], (1, 0)) == 0  # the order decides ties only
    assert argmax_in_order([-3.0, -1.0, -1.0, -1.0], (3, 1, 2, 0)) == 3
    with pytest.raises(ValueError):
        argmax_in_order([-1.0, -1.0], (0, 0))


def test_boolq_tie_goes_to_true_as_in_the_original():
    # choices are ["False", "True"] (HF label order); the original scores True first
    preds = choice_predictions([-1.0, -1.0], ["False", "True"], [1, 1], original_order=(1, 0))
    assert preds == {"pred": 0, "pred_norm": 0, "pred_per_token": 1}  # acc/acc_norm keep the harness rule
    assert choice_predictions([-2.0, -1.0], ["False", "True"], [2, 1], (1, 0))["pred_per_token"] == 1  # -1 == -1
    assert choice_predictions([-1.0, -1.5], ["False", "True"], [1, 1], (1, 0))["pred_per_token"] == 0  # no tie


@pytest.mark.parametrize("task_name", list(ORIGINAL_CANDIDATE_ORDER))
def test_original_order_names_the_original_candidates(tiny_data_dir, task_name):
    task = build_task(task_name, {"data_dir": str(tiny_data_dir)}, 0)
    choices = task.doc_to_choice(task.eval_docs[0])
    order = task.spec.original_choice_order or range(len(choices))
    assert [choices[i] for i in order] == ORIGINAL_CANDIDATE_ORDER[task_name]


@pytest.mark.parametrize("task_name", CHOICE_TASKS)
def test_an_exact_per_token_tie_through_the_task(tiny_data_dir, tiny_model_dir, task_name):
    """Every choice at the same mean log-likelihood per token: the original's first candidate wins."""
    task = build_task(task_name, {"data_dir": str(tiny_data_dir), "score_tokenizer": str(tiny_model_dir)}, 0)
    first = ORIGINAL_CANDIDATE_ORDER.get(task_name, [None])[0]
    for index, doc in enumerate(task.eval_docs):
        context, conts = render_prompt(task, index)
        counts = [continuation_token_count(_tok(tiny_model_dir), context, c) for c in conts]
        results = [(-0.5 * n, False) for n in counts]
        winner = conts.index(f" {first}") if first else 0
        expected = float(task.doc_to_target(doc) == winner)
        assert task.process_results(doc, results)["acc_per_token"] == expected, (index, conts)
    if task_name == "boolq":  # the tiny BoolQ eval split holds both answers: True wins every tie
        golds = [task.doc_to_target(d) for d in task.eval_docs]
        assert set(golds) == {0, 1}


# ------------------------------------------------------------------------------ line boundaries

# Every boundary of str.splitlines(); the harness's until=["\n"] stops only at the first.
LINE_BOUNDARIES = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("boundary", LINE_BOUNDARIES, ids=[repr(b) for b in LINE_BOUNDARIES])
def test_first_line_cuts_at_every_splitlines_boundary(boundary):
    from instructeval_tasks.scoring import first_line

    assert first_line(f" Tokyo{boundary}Japan") == " Tokyo"
    assert first_line(f"{boundary}Tokyo") == ""
    assert first_line(f" Tokyo{boundary}Japan") == f" Tokyo{boundary}Japan".splitlines()[0]  # the original's rule


@pytest.mark.parametrize("boundary", LINE_BOUNDARIES, ids=[repr(b) for b in LINE_BOUNDARIES])
def test_task_scores_the_first_line_only(tiny_data_dir, boundary):
    task = build_task("nq_open", {"data_dir": str(tiny_data_dir)}, 0)
    doc = task.eval_docs[2]  # gold ["Tokyo"]
    assert task.process_results(doc, [f" Tokyo{boundary}Japan"]) == {"quasi_exact_match": 1.0}
    assert task.process_results(doc, [f" Japan{boundary}Tokyo"]) == {"quasi_exact_match": 0.0}
    # uncut, the second line would join the answer: normalize_answer treats the boundary as a space
    assert quasi_exact_match(["Tokyo"], f" Tokyo{boundary}Japan") == 0.0


def test_task_scores_an_empty_first_line_as_the_original(tiny_data_dir):
    task = build_task("triviaqa", {"data_dir": str(tiny_data_dir)}, 0)
    assert task.process_results(task.eval_docs[2], ["\u2028Ottawa"]) == {"quasi_exact_match": 0.0}
    assert task.process_results(task.eval_docs[2], [""]) == {"quasi_exact_match": 0.0}


def test_empty_prediction_matches_a_gold_that_normalises_to_empty():
    # The original (metrics/utils.py) compares normalised strings: "" == N("The") -> 1. HELM scores
    # an empty prediction 0; the plugin follows the original.
    assert quasi_exact_match(["The"], "") == 1.0
    assert quasi_exact_match(["a", "Paris"], "\n") == 1.0
    assert quasi_exact_match(["Paris"], "") == 0.0
