"""Validation: every error of a native file, a structured entry and an original-layout file, collected.

``tests/test_banks.py`` covers the single-error cases of native files; here: structured entries,
duplicate texts, original-layout files, and that every problem of a directory is reported at once.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from instructeval_banks import BankError, check_bank_dir, check_bank_file, load_bank_dir, parse_bank_file

HEADER = "method: custom\ntasks: [agnews]\nprovenance: {source: unit test}\n"
GOOD_STRUCTURED = """\
    structured:
      prompt: Classify the article.
      definition: Pick its topic.
      positive_examples:
        - {input: Stocks rose., output: Business, reason: Markets.}
"""


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def errors_of(path: Path, *fragments: str) -> list[str]:
    """parse_bank_file and load_bank_dir both raise, naming the file and every fragment."""
    for call in (lambda: parse_bank_file(path), lambda: load_bank_dir(path.parent)):
        with pytest.raises(BankError) as info:
            call()
        message = str(info.value)
        assert str(path) in message, message
        for fragment in fragments:
            assert fragment in message, (fragment, message)
    return info.value.errors


# ------------------------------------------------------------------------------ duplicate texts

@pytest.mark.parametrize("second", ["Pick one.", "pick ONE.", "  Pick   one. ", "Pick\none."])
def test_duplicate_text_ignoring_case_and_whitespace(tmp_path, second):
    path = write(tmp_path / "b.yaml", HEADER + f"entries:\n  - {{id: a, text: Pick one.}}\n  - {{id: b, text: {json.dumps(second)}}}\n")
    errors_of(path, "entry 1", "'b'", "duplicate instruction text", "entry 0")


# ------------------------------------------------------------------------------ structured entries

def test_a_valid_structured_entry(tmp_path):
    path = write(tmp_path / "s.yaml", HEADER + "entries:\n  - id: s0\n" + GOOD_STRUCTURED)
    (entry,) = parse_bank_file(path)
    assert entry.is_structured and entry.structured["prompt"] == "Classify the article."
    assert entry.text.startswith("Definition: Pick its topic.\n\nPrompt: Classify the article.")


@pytest.mark.parametrize(
    "structured, fragments",
    [
        ("structured: just text", ["'structured' must be a mapping"]),
        ("structured: {definition: D, positive_examples: [{input: i, output: o, reason: r}]}", ["missing required key 'prompt'"]),
        ("structured: {prompt: P, positive_examples: [{input: i, output: o, reason: r}]}", ["missing required key 'definition'"]),
        ("structured: {prompt: P, definition: D}", ["'positive_examples'"]),
        ("structured: {prompt: P, definition: D, positive_examples: []}", ["positive_examples must be a non-empty list"]),
        ("structured: {prompt: '  ', definition: D, positive_examples: [{input: i, output: o, reason: r}]}", ["structured.prompt is empty"]),
        ("structured: {prompt: 3, definition: D, positive_examples: [{input: i, output: o, reason: r}]}", ["structured.prompt must be a string"]),
        ("structured: {prompt: 'Use {{x}}', definition: D, positive_examples: [{input: i, output: o, reason: r}]}", ["structured.prompt", "'{{'"]),
        ("structured: {prompt: P, definition: D, extra: 1, positive_examples: [{input: i, output: o, reason: r}]}", ["unknown key(s) ['extra']"]),
        ("structured: {prompt: P, definition: D, positive_examples: [{input: i, output: o}]}", ["positive_examples[0]: missing 'reason'"]),
        ("structured: {prompt: P, definition: D, positive_examples: [text]}", ["positive_examples[0] must be a mapping"]),
        ("structured: {prompt: P, definition: D, positive_examples: [{input: i, output: o, reason: r, why: w}]}", ["positive_examples[0]: unknown key(s) ['why']"]),
        ("structured: {prompt: P, definition: D, positive_examples: [{input: i, output: o, reason: r}], negative_examples: x}", ["negative_examples must be a list"]),
        ("structured: {prompt: P, definition: D, positive_examples: [{input: i, output: o, reason: r}], negative_examples: [{input: i, output: o, reason: r, suggestion: 4}]}", ["negative_examples[0].suggestion must be a string"]),
        ("structured: {prompt: P, definition: D, things_to_avoid: [a], positive_examples: [{input: i, output: o, reason: r}]}", ["structured.things_to_avoid must be a string"]),
    ],
)
def test_structured_entry_errors(tmp_path, structured, fragments):
    path = write(tmp_path / "s.yaml", HEADER + f"entries:\n  - id: s0\n    {structured}\n")
    errors_of(path, "entry 0", "'s0'", *fragments)


def test_text_and_structured_together(tmp_path):
    path = write(tmp_path / "s.yaml", HEADER + "entries:\n  - id: s0\n    text: Hi\n" + GOOD_STRUCTURED)
    errors_of(path, "'s0'", "both 'text' and 'structured'")


def test_null_method_cannot_be_structured(tmp_path):
    path = write(tmp_path / "s.yaml", 'method: "null"\ntasks: all\nprovenance: {source: x}\nentries:\n  - id: n\n' + GOOD_STRUCTURED)
    errors_of(path, "'n'", "null method cannot have a structured entry")


def test_structured_entry_without_text_or_structured(tmp_path):
    path = write(tmp_path / "s.yaml", HEADER + "entries:\n  - {id: s0, note: nothing}\n")
    errors_of(path, "'s0'", "missing 'text' (or 'structured')")


# ------------------------------------------------------------------------------ original layout

def test_original_layout_item_not_a_string(tmp_path):
    path = write(tmp_path / "manual" / "ag_news.yaml", '- "Fine."\n- 3\n- [a, b]\n- null\n')
    with pytest.raises(BankError) as info:
        load_bank_dir(tmp_path)
    message = str(info.value)
    for fragment in ("item 1", "expected a string, got int", "item 2", "got list", "item 3", "got NoneType", str(path)):
        assert fragment in message, (fragment, message)
    assert len(info.value.errors) == 3


@pytest.mark.parametrize(
    "rel, content, fragments",
    [
        ("manual/ag_news.yaml", '- ""\n', ["item 0", "empty instruction for method 'promptsource'"]),
        ("no_instruction/ag_news.yaml", '- "Something"\n', ["item 0", "null method's entry must be the empty string"]),
        ("ape/ag_news.yaml", '- "Use {% x %} here"\n', ["item 0", "'{%'"]),
        ("ape/ag_news.yaml", '- "Same"\n- "same "\n', ["item 1", "duplicate instruction text"]),
        ("manual/agnews_v2.yaml", '- "Fine."\n', ["unknown task file stem 'agnews_v2'"]),
        ("manual/ag_news.yaml", "[]\n", ["list is empty"]),
        ("low_perplexity_prompts/opt1b3/extra/ag_news.yaml", '- "Fine."\n', ["not where the original layout puts a bank"]),
    ],
)
def test_original_layout_errors(tmp_path, rel, content, fragments):
    path = write(tmp_path / rel, content)
    with pytest.raises(BankError) as info:
        load_bank_dir(tmp_path)
    message = str(info.value)
    assert str(path) in message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_original_layout_non_utf8(tmp_path):
    path = write(tmp_path / "manual" / "ag_news.yaml", b'- "caf\xe9"\n')
    with pytest.raises(BankError, match="not UTF-8") as info:
        load_bank_dir(tmp_path)
    assert str(path) in str(info.value)


def test_original_and_native_file_for_the_same_bank(tmp_path):
    write(tmp_path / "manual" / "ag_news.yaml", '- "One"\n')
    second = write(tmp_path / "ps.yaml", "method: promptsource\ntasks: [agnews]\nprovenance: {source: x}\nentries:\n  - {id: a, text: Two}\n")
    with pytest.raises(BankError) as info:
        load_bank_dir(tmp_path)
    assert "also defined in" in str(info.value) and str(second) in str(info.value)


# ------------------------------------------------------------------------------ collecting every error

def test_every_problem_of_a_directory_is_collected(tmp_path):
    bad_native = write(
        tmp_path / "a.yaml",
        "method: custom\ntasks: [agnews, nope]\nprovenance: {source: x}\nentries:\n"
        "  - {id: a, text: One}\n  - {id: a, text: Two}\n  - {id: c, text: ''}\n  - {id: d, text: 'x {{y}}'}\n",
    )
    bad_entries = write(
        tmp_path / "b.yaml",
        "method: other\ntasks: [imdb]\nprovenance: {source: x}\nentries:\n  - {id: a, text: One}\n  - {id: b, text: 3}\n  - {id: c, text: ONE}\n",
    )
    bad_yaml = write(tmp_path / "c.yaml", "method: [\n")
    bad_bytes = write(tmp_path / "d.yaml", b"method: caf\xe9\n")
    bad_original = write(tmp_path / "manual" / "imdb.yaml", '- "Fine"\n- 4\n')
    bank, errors = check_bank_dir(tmp_path)
    text = "\n".join(errors)
    assert f"{bad_native}: unknown task 'nope'" in text
    assert f"{bad_entries}: entry 1 (id 'b'): 'text' must be a string" in text
    assert f"{bad_entries}: entry 2 (id 'c'): duplicate instruction text" in text
    assert f"{bad_yaml}: not valid YAML" in text
    assert f"{bad_bytes}: not UTF-8" in text
    assert f"{bad_original}: item 1: expected a string" in text
    assert len(errors) == 6, errors
    # the header error of a.yaml stops its entries from being read; fix it and its entry errors appear
    write(bad_native, bad_native.read_text().replace("[agnews, nope]", "[agnews]"))
    _bank, errors = check_bank_dir(tmp_path)
    text = "\n".join(errors)
    assert "entry 1 (id 'a'): duplicate id" in text
    assert "entry 2 (id 'c'): empty instruction" in text
    assert "entry 3 (id 'd'): the instruction contains '{{'" in text
    assert bank is not None  # the valid part is still indexed (for listing), but load_bank_dir refuses
    with pytest.raises(BankError) as info:
        load_bank_dir(tmp_path)
    assert len(info.value.errors) == len(errors) >= 8


def test_check_bank_file_returns_the_errors_without_raising(tmp_path):
    path = write(tmp_path / "a.yaml", HEADER + "entries:\n  - {id: a, text: ''}\n  - {id: b, text: []}\n  - {id: c, text: Fine}\n")
    entries, errors = check_bank_file(path)
    assert [e.id for e in entries] == ["c"]
    assert len(errors) == 2 and all(str(path) in e for e in errors)


def test_bank_error_carries_the_list_of_errors():
    err = BankError(["first", "second"])
    assert err.errors == ["first", "second"] and str(err) == "first\nsecond"
    assert BankError("one").errors == ["one"]
