"""APE text handling without a model: the meta-prompt, candidate cleanup, drop rules and selection."""

from __future__ import annotations

import pytest

from instructeval_tasks.induce.ape import (
    ApeCandidate,
    apply_drops,
    clean_candidate,
    drop_reason,
    gen_kwargs,
    render_meta_prompt,
    select_top,
)

PAIRS = [("sane", "insane"), ("direct", "indirect"), ("informally", "formally"), ("unpopular", "popular"),
         ("subtractive", "additive")]


def test_meta_prompt_golden():
    """The Instruction Induction prompt (Honovich et al. 2022), byte for byte, for five pairs."""
    assert render_meta_prompt(PAIRS) == (
        "I gave a friend an instruction and five inputs. The friend read the instruction and wrote an output "
        "for every one of the inputs. Here are the input-output pairs:\n"
        "\n"
        "Input: sane\nOutput: insane\n"
        "\n"
        "Input: direct\nOutput: indirect\n"
        "\n"
        "Input: informally\nOutput: formally\n"
        "\n"
        "Input: unpopular\nOutput: popular\n"
        "\n"
        "Input: subtractive\nOutput: additive\n"
        "\n"
        "The instruction was"
    )


def test_meta_prompt_names_the_number_of_pairs_and_keeps_multiline_inputs():
    prompt = render_meta_prompt([("Premise: A\nHypothesis: B", "Entail"), ("x", "y"), ("z", "w")])
    assert prompt.startswith("I gave a friend an instruction and three inputs.")
    assert "\n\nInput: Premise: A\nHypothesis: B\nOutput: Entail\n\nInput: x\nOutput: y\n\n" in prompt
    assert prompt.endswith("Output: w\n\nThe instruction was")


@pytest.mark.parametrize(
    "raw,expected",
    [
        (" to classify each news article by topic.", "classify each news article by topic."),  # APE's frame
        (" To Classify the article.", "Classify the article."),
        (": write the antonym of the word.", "write the antonym of the word."),
        (" probably to translate the input into French", "translate the input into French"),
        (" most likely: add the two numbers", "add the two numbers"),
        (' "Write the opposite of the given word."', "Write the opposite of the given word."),
        (' to output "positive" if the review is good', 'output "positive" if the review is good'),
        (' to say "pick the best ending of the sentence" to the friend', "pick the best ending of the sentence"),
        (" together, sort the words", "together, sort the words"),  # 'to' only as a whole word
        (" today's date\nInput: x", "today's date"),
        ("\n\n  to   sort   the\twords  \nmore", "sort the words"),  # first non-empty line, whitespace collapsed
        ("'classify the tweet'", "classify the tweet"),
        ("", ""),
    ],
)
def test_clean_candidate_strips_the_frame(raw, expected):
    assert clean_candidate(raw) == expected


def test_drop_rules():
    kept = ["Classify the news article."]
    assert drop_reason("", kept) == "empty"
    assert drop_reason(clean_candidate(' "" '), kept) == "empty"
    assert drop_reason("...", kept) == "empty"
    assert drop_reason("Use {{ text }} to decide.", kept) == "template_syntax"
    assert drop_reason("Pick {% if x %}", kept) == "template_syntax"
    assert drop_reason("x" * 301, kept) == "too_long"
    assert drop_reason("x" * 300, kept) is None
    assert drop_reason("x" * 50, kept, max_chars=40) == "too_long"
    assert drop_reason("classify   the NEWS article", kept) == "duplicate"  # case, whitespace, final '.'
    assert drop_reason("Classify the news article!", kept) is None
    assert drop_reason("Classify the news.", kept) is None


def test_apply_drops_records_reasons_in_order_and_keeps_the_first_copy():
    cands = [
        ApeCandidate(0, "greedy", None, " to sort the words.", "sort the words."),
        ApeCandidate(0, "sampled", 0, " to Sort the words", "Sort the words"),
        ApeCandidate(1, "greedy", None, "", ""),
        ApeCandidate(1, "sampled", 0, " to use {{x}}", "use {{x}}"),
        ApeCandidate(1, "sampled", 1, " to reverse the words", "reverse the words"),
    ]
    kept = apply_drops(cands)
    assert [c.text for c in kept] == ["sort the words.", "reverse the words"]
    assert [c.dropped for c in cands] == [None, "duplicate", "empty", "template_syntax", None]


def test_selection_is_by_execution_accuracy_with_stable_ties():
    cands = [ApeCandidate(i, "greedy", None, "", f"c{i}", execution_accuracy=acc) for i, acc in enumerate([0.5, 0.75, 0.5, 0.25])]
    assert [c.text for c in select_top(cands, 3)] == ["c1", "c0", "c2"]


def test_generation_kwargs():
    assert gen_kwargs(sampled=False, temperature=0.7, max_gen_toks=50) == {
        "until": ["\n\n", "Input:"], "max_gen_toks": 50, "do_sample": False, "temperature": 0.0}
    assert gen_kwargs(sampled=True, temperature=0.7, max_gen_toks=50) == {
        "until": ["\n\n", "Input:"], "max_gen_toks": 50, "do_sample": True, "temperature": 0.7}
