"""Instruction banks: the shipped banks, every validation error of a bank file, lookup errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from instructeval_banks import BankError, load_bank, load_bank_dir, parse_bank_file

ALL_TASKS = ["agnews", "anli", "boolq", "imdb", "emotion", "cosmosqa", "hellaswag", "nq_open", "triviaqa"]
# Ajith et al. (2024), Table 9 / protocol.md §8: the same five generic strings, in this order, for every task.
GENERIC = [
    "Solve the following task:",
    "Find the answer below:",
    "Complete the problem.",
    "Find the best solution to the question below:",
    "Complete the question below:",
]


# ------------------------------------------------------------------------------ shipped banks

@pytest.mark.parametrize("task", ALL_TASKS)
def test_shipped_null_bank(task):
    entries = load_bank().entries("null", task)
    assert [e.text for e in entries] == [""]
    assert entries[0].index == 0 and entries[0].method == "null" and entries[0].task == task


@pytest.mark.parametrize("task", ALL_TASKS)
def test_shipped_generic_bank(task):
    entries = load_bank().entries("generic", task)
    assert [e.text for e in entries] == GENERIC
    assert [e.id for e in entries] == [f"generic-{i}" for i in range(5)]
    assert [e.index for e in entries] == list(range(5))
    for i, text in enumerate(GENERIC):
        assert load_bank().entry("generic", task, index=i).text == text
        assert load_bank().entry("generic", task, entry_id=f"generic-{i}").text == text


def test_shipped_bank_methods_in_paper_order():
    methods = load_bank().methods("agnews")
    assert methods[:2] == ["null", "generic"]


def test_entry_sha_is_a_content_hash():
    import hashlib

    entry = load_bank().entry("generic", "anli", index=2)
    assert entry.sha == hashlib.sha256(b"Complete the problem.").hexdigest()[:16]


# ------------------------------------------------------------------------------ validation errors

VALID_HEADER = """\
method: custom
tasks: [agnews, imdb]
provenance:
  source: unit test
"""


def write(tmp_path: Path, text: str | bytes, name: str = "bank.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def assert_bank_error(path: Path, *fragments: str) -> str:
    """parse_bank_file(path) and load_bank_dir(path.parent) both raise naming the file and fragments."""
    for call in (lambda: parse_bank_file(path), lambda: load_bank_dir(path.parent)):
        with pytest.raises(BankError) as info:
            call()
        message = str(info.value)
        assert str(path) in message, message
        for fragment in fragments:
            assert fragment in message, (fragment, message)
    return message


def test_a_valid_custom_file_parses(tmp_path):
    path = write(tmp_path, VALID_HEADER + 'entries:\n  - {id: c0, text: "Pick one."}\n  - {id: 7, text: " Two "}\n')
    entries = parse_bank_file(path)
    assert [(e.task, e.id, e.text, e.index) for e in entries] == [
        ("agnews", "c0", "Pick one.", 0), ("agnews", "7", " Two ", 1),
        ("imdb", "c0", "Pick one.", 0), ("imdb", "7", " Two ", 1),
    ]
    bank = load_bank_dir(tmp_path)
    assert bank.entry("custom", "imdb", index=1).text == " Two "


@pytest.mark.parametrize("content", ["just a string\n", "42\n", "null\n", ""])
def test_non_mapping_file(tmp_path, content):
    path = write(tmp_path, content)
    assert_bank_error(path, "mapping")


@pytest.mark.parametrize("key", ["method", "tasks", "provenance", "entries"])
def test_missing_required_key(tmp_path, key):
    parts = {
        "method": "method: custom\n",
        "tasks": "tasks: all\n",
        "provenance": "provenance: {source: x}\n",
        "entries": "entries:\n  - {id: a, text: Hi}\n",
    }
    path = write(tmp_path, "".join(v for k, v in parts.items() if k != key))
    assert_bank_error(path, repr(key))


@pytest.mark.parametrize("method", ["Generic", "my-method", "1st", "", "null_ok!"])
def test_bad_method_name(tmp_path, method):
    path = write(tmp_path, f'method: "{method}"\ntasks: all\nprovenance: {{source: x}}\nentries:\n  - {{id: a, text: Hi}}\n')
    assert_bank_error(path, "'method'", repr(method))


def test_method_must_be_a_string(tmp_path):
    path = write(tmp_path, "method: 3\ntasks: all\nprovenance: {source: x}\nentries:\n  - {id: a, text: Hi}\n")
    assert_bank_error(path, "'method'")


def test_unknown_task(tmp_path):
    path = write(tmp_path, "method: custom\ntasks: [agnews, ag_news]\nprovenance: {source: x}\nentries:\n  - {id: a, text: Hi}\n")
    assert_bank_error(path, "'ag_news'", "agnews")  # names the bad id and lists the known ones


@pytest.mark.parametrize("tasks", ["[]", "{agnews: 1}", "[agnews, 3]"])
def test_bad_tasks_value(tmp_path, tasks):
    path = write(tmp_path, f"method: custom\ntasks: {tasks}\nprovenance: {{source: x}}\nentries:\n  - {{id: a, text: Hi}}\n")
    assert_bank_error(path, "'tasks'")


def test_duplicate_task_in_tasks(tmp_path):
    """Listing a task twice must not duplicate its entries (index 1 would repeat index 0)."""
    path = write(tmp_path, "method: custom\ntasks: [agnews, agnews]\nprovenance: {source: x}\nentries:\n  - {id: a, text: Hi}\n")
    assert_bank_error(path, "agnews")


@pytest.mark.parametrize("entries", ["{id: a, text: Hi}", "Hi", "[]"])
def test_entries_not_a_non_empty_list(tmp_path, entries):
    path = write(tmp_path, VALID_HEADER + f"entries: {entries}\n")
    assert_bank_error(path, "'entries'")


def test_provenance_needs_a_source(tmp_path):
    path = write(tmp_path, "method: custom\ntasks: all\nprovenance: somewhere\nentries:\n  - {id: a, text: Hi}\n")
    assert_bank_error(path, "'provenance'")


def test_entry_not_a_mapping(tmp_path):
    path = write(tmp_path, VALID_HEADER + "entries:\n  - {id: a, text: Hi}\n  - Just text\n")
    assert_bank_error(path, "entry 1")


@pytest.mark.parametrize("entry", ["{text: Hi}", "{id: '', text: Hi}", "{id: null, text: Hi}", "{id: true, text: Hi}"])
def test_entry_without_id(tmp_path, entry):
    path = write(tmp_path, VALID_HEADER + f"entries:\n  - {{id: a, text: Hello}}\n  - {entry}\n")
    assert_bank_error(path, "entry 1", "'id'")


def test_duplicate_id(tmp_path):
    path = write(tmp_path, VALID_HEADER + "entries:\n  - {id: a, text: One}\n  - {id: b, text: Two}\n  - {id: a, text: Three}\n")
    assert_bank_error(path, "entry 2", "'a'", "duplicate")


def test_entry_without_text(tmp_path):
    path = write(tmp_path, VALID_HEADER + "entries:\n  - {id: a}\n")
    assert_bank_error(path, "entry 0", "'a'", "'text'")


@pytest.mark.parametrize("text", ["3", "[a, b]", "{x: 1}", "null", "true"])
def test_non_string_text(tmp_path, text):
    path = write(tmp_path, VALID_HEADER + f"entries:\n  - {{id: ok, text: Fine}}\n  - {{id: bad, text: {text}}}\n")
    assert_bank_error(path, "entry 1", "'bad'", "string")


@pytest.mark.parametrize("text", ['""', '"   "', '"\\n\\t"'])
def test_empty_text_for_a_non_null_method(tmp_path, text):
    path = write(tmp_path, VALID_HEADER + f"entries:\n  - {{id: e, text: {text}}}\n")
    assert_bank_error(path, "entry 0", "'e'", "empty")


def test_non_empty_text_for_the_null_method(tmp_path):
    path = write(tmp_path, 'method: "null"\ntasks: all\nprovenance: {source: x}\nentries:\n  - {id: n, text: "Something"}\n')
    assert_bank_error(path, "entry 0", "'n'", "null")


@pytest.mark.parametrize("token", ["{{", "{%", "{#"])
def test_template_syntax_in_text(tmp_path, token):
    path = write(tmp_path, VALID_HEADER + f'entries:\n  - {{id: ok, text: "Fine"}}\n  - {{id: t, text: "Use {token} here"}}\n')
    assert_bank_error(path, "entry 1", "'t'", repr(token))


def test_non_utf8_bytes(tmp_path):
    path = write(tmp_path, (VALID_HEADER + "entries:\n  - {id: a, text: \"caf").encode() + b"\xe9\"}\n")
    assert_bank_error(path, "UTF-8")


@pytest.mark.parametrize("content", ["method: custom\n  tasks: [\n", "entries:\n  - {id: a, text: Hi\n", "a: b: c\n"])
def test_invalid_yaml(tmp_path, content):
    path = write(tmp_path, content)
    assert_bank_error(path, "YAML")


def test_unknown_top_level_key(tmp_path):
    path = write(tmp_path, VALID_HEADER + "instructions: []\nentries:\n  - {id: a, text: Hi}\n")
    assert_bank_error(path, "'instructions'")


def test_two_files_define_the_same_method_and_task(tmp_path):
    write(tmp_path, "method: custom\ntasks: [agnews]\nprovenance: {source: x}\nentries:\n  - {id: a, text: One}\n", "a.yaml")
    second = write(tmp_path, "method: custom\ntasks: [imdb, agnews]\nprovenance: {source: x}\nentries:\n  - {id: b, text: Two}\n", "b.yaml")
    with pytest.raises(BankError) as info:
        load_bank_dir(tmp_path)
    message = str(info.value)
    assert str(second) in message and str(tmp_path / "a.yaml") in message
    assert "'custom'" in message and "'agnews'" in message


def test_two_files_for_different_tasks_are_fine(tmp_path):
    write(tmp_path, "method: custom\ntasks: [agnews]\nprovenance: {source: x}\nentries:\n  - {id: a, text: One}\n", "a.yaml")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "method: custom\ntasks: [imdb]\nprovenance: {source: x}\nentries:\n  - {id: b, text: Two}\n", "b.yaml")
    bank = load_bank_dir(tmp_path)
    assert bank.entry("custom", "agnews").text == "One"
    assert bank.entry("custom", "imdb").text == "Two"


def test_empty_or_missing_bank_directory(tmp_path):
    with pytest.raises(BankError, match="no \\*.yaml"):
        load_bank_dir(tmp_path)
    with pytest.raises(BankError, match="does not exist"):
        load_bank_dir(tmp_path / "nope")


# ------------------------------------------------------------------------------ lookup errors

def test_unknown_method_lists_the_available_ones():
    with pytest.raises(BankError) as info:
        load_bank().entry("ape_v2", "agnews")
    message = str(info.value)
    assert "'ape_v2'" in message and "null" in message and "generic" in message


def test_index_out_of_range_states_the_valid_range():
    with pytest.raises(BankError) as info:
        load_bank().entry("generic", "boolq", index=5)
    assert "0..4" in str(info.value) and "5" in str(info.value)
    with pytest.raises(BankError, match="0..0"):
        load_bank().entry("null", "boolq", index=1)
    with pytest.raises(BankError, match="0..4"):
        load_bank().entry("generic", "boolq", index=-1)


def test_unknown_entry_id_lists_the_ids():
    with pytest.raises(BankError) as info:
        load_bank().entry("generic", "imdb", entry_id="generic-9")
    message = str(info.value)
    assert "'generic-9'" in message and "generic-0" in message and "generic-4" in message
