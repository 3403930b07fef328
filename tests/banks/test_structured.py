"""Structured (Natural Instructions) entries: golden renderings of every encoding, run-time choice."""

from __future__ import annotations

import pytest

from instructeval_banks import DEFAULT_ENCODING, ENCODINGS, BankError, load_bank, render_structured

TASKS = ["agnews", "anli", "boolq", "imdb", "emotion", "cosmosqa", "hellaswag", "nq_open", "triviaqa"]

S = {
    "title": "Toy topic task",
    "prompt": "Classify the article.",
    "definition": "Given an article, name its topic.",
    "things_to_avoid": "Do not explain.",
    "emphasis_and_caution": "Only four topics exist.",
    "positive_examples": [
        {"input": "Stocks rose.", "output": "Business", "reason": "Markets."},
        {"input": "Team wins.", "output": "Sports", "reason": "A match."},
    ],
    "negative_examples": [
        {"input": "Probe lands.", "output": "World", "reason": "It is space science.", "suggestion": "Answer Sci/Tech."},
    ],
}
DEF = "Definition: Given an article, name its topic."
PROMPT = "Prompt: Classify the article."
AVOID = "Things to Avoid: Do not explain."
EMPH = "Emphasis & Caution: Only four topics exist."
POS = (
    "Positive Example 1 -\nInput: Stocks rose.\nOutput: Business\nExplanation: Markets.\n\n"
    "Positive Example 2 -\nInput: Team wins.\nOutput: Sports\nExplanation: A match."
)
NEG = "Negative Example 1 -\nInput: Probe lands.\nOutput: World\nExplanation: It is space science.\nSuggestion: Answer Sci/Tech."
GOLDEN = {
    "prompt": PROMPT,
    "pos_examples": POS,
    "prompt_definition": f"{DEF}\n\n{PROMPT}",
    "prompt_avoid": f"{PROMPT}\n\n{AVOID}",
    "prompt_emphasis": f"{PROMPT}\n\n{EMPH}",
    "prompt_pos_examples": f"{PROMPT}\n\n{POS}",
    "prompt_definition_pos_examples": f"{DEF}\n\n{PROMPT}\n\n{POS}",
    "full": f"{DEF}\n\n{PROMPT}\n\n{AVOID}\n\n{EMPH}\n\n{POS}\n\n{NEG}",
}


def test_the_eight_encodings():
    assert ENCODINGS == tuple(GOLDEN) and DEFAULT_ENCODING == "full"


@pytest.mark.parametrize("encoding", list(GOLDEN))
def test_golden_rendering(encoding):
    assert render_structured(S, encoding) == GOLDEN[encoding]


def test_default_encoding_is_full():
    assert render_structured(S) == GOLDEN["full"]


def test_absent_optional_parts_are_left_out():
    minimal = {k: S[k] for k in ("prompt", "definition", "positive_examples")}
    minimal = {**minimal, "things_to_avoid": "-", "emphasis_and_caution": "", "positive_examples": S["positive_examples"][:1]}
    one = "Positive Example 1 -\nInput: Stocks rose.\nOutput: Business\nExplanation: Markets."
    assert render_structured(minimal) == f"{DEF}\n\n{PROMPT}\n\n{one}"
    assert render_structured(minimal, "prompt_avoid") == PROMPT  # nothing to avoid: the prompt alone
    no_suggestion = {**S, "negative_examples": [{"input": "a", "output": "b", "reason": "c"}]}
    assert render_structured(no_suggestion).endswith("Negative Example 1 -\nInput: a\nOutput: b\nExplanation: c")


def test_values_are_stripped_and_title_is_never_rendered():
    padded = {**S, "prompt": "  Classify the article.\n"}
    assert render_structured(padded, "prompt") == PROMPT
    assert all("Toy topic task" not in render_structured(S, e) for e in ENCODINGS)


def test_unknown_encoding_and_invalid_mapping():
    with pytest.raises(BankError, match="unknown instruction encoding 'definition_only'"):
        render_structured(S, "definition_only")
    with pytest.raises(BankError, match="missing required key 'prompt'"):
        render_structured({"definition": "d", "positive_examples": S["positive_examples"]})


# ------------------------------------------------------------------------------ shipped bank

@pytest.mark.parametrize("task", TASKS)
def test_shipped_structured_entry(task):
    (entry,) = load_bank().entries("structured", task)
    assert entry.id == f"structured-{task}-0" and entry.is_structured
    assert entry.text == render_structured(entry.structured, "full")
    for encoding in ENCODINGS:
        text = render_structured(entry.structured, encoding)
        assert text.strip() and "{" not in text
    assert entry.structured["negative_examples"] and entry.structured["things_to_avoid"]


# ------------------------------------------------------------------------------ run-time choice

def _resolve(metadata, task="agnews"):
    from instructeval_tasks.instruction import resolve_instruction
    from instructeval_tasks.options import TaskOptions
    from instructeval_tasks.specs import TASK_SPECS

    return resolve_instruction(TaskOptions.from_metadata(metadata), TASK_SPECS[task])


def test_instruction_encoding_option_renders_the_entry():
    entry = load_bank().entry("structured", "boolq")
    default = _resolve({"method": "structured"}, "boolq")
    assert default.text == entry.text and default.encoding == "full"
    chosen = _resolve({"method": "structured", "instruction_encoding": "prompt_definition"}, "boolq")
    assert chosen.text == render_structured(entry.structured, "prompt_definition")
    record = chosen.record()
    assert record["instruction_encoding"] == "prompt_definition"
    assert record["instruction_id"] == "structured-boolq-0" and record["instruction_text"] == chosen.text


def test_plain_entries_ignore_the_encoding():
    plain = _resolve({"method": "generic", "instruction_encoding": "prompt"})
    assert plain.text == "Solve the following task:" and plain.record()["instruction_encoding"] is None
    literal = _resolve({"instruction": "Classify.", "instruction_encoding": "prompt"})
    assert literal.record()["instruction_encoding"] is None


def test_bad_encoding_is_an_option_error():
    from instructeval_tasks.options import OptionError, TaskOptions

    with pytest.raises(OptionError, match="instruction_encoding='definitions'"):
        TaskOptions.from_metadata({"instruction_encoding": "definitions"})
    assert TaskOptions.from_metadata({}).instruction_encoding is None


def test_prompt_of_a_structured_instruction(request):
    from instructeval_tasks.preview import build_task, render_prompt

    try:  # the tiny offline data of tests/conftest.py
        tiny_data_dir = request.getfixturevalue("tiny_data_dir")
    except pytest.FixtureLookupError:
        pytest.skip("tests/conftest.py's tiny_data_dir fixture is not available")

    entry = load_bank().entry("structured", "agnews")
    task = build_task(
        "agnews",
        {"data_dir": str(tiny_data_dir), "method": "structured", "instruction_encoding": "prompt_pos_examples"},
        0,
    )
    context, continuations = render_prompt(task, 0)
    expected = render_structured(entry.structured, "prompt_pos_examples")
    assert context == f"{expected}\n\nNews: Fears for pension after talks.\nCategory:"
    assert continuations == [" World", " Sports", " Business", " Sci/Tech"]
