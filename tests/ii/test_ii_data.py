"""Rows of the raw files (as the original's prepare_for_execution.py), where the files come from, and
the errors that name them."""

from __future__ import annotations

import json

import pytest

from instructeval_tasks.errors import UserError
from instructeval_tasks.ii import source
from instructeval_tasks.ii.names import INDUCTION_TASKS, ii_id, source_name
from instructeval_tasks.ii.examples import build_rows


def test_generic_task_rows_keep_ids_and_single_answer():
    rows = build_rows("antonyms", [("7", {"input": "hot", "output": "cold"})], "f.json")
    assert rows == [{"id": "7", "source_id": "7", "input": "hot", "answers": ["cold"], "output": "cold"}]


def test_answer_fields_of_task_to_answers():
    rhymes = build_rows("rhymes", [("1", {"input": "compete", "output": "neat", "other_rhymes": ["eat", "neat"]})], "f")
    assert rhymes[0]["answers"] == ["eat", "neat"] and rhymes[0]["output"] == "neat"
    wic = build_rows("word_in_context", [("1", {"input": "x", "output": "not the same",
                                                "possible_outputs": ["not the same", "no", "false"]})], "f")
    assert wic[0]["answers"] == ["not the same", "no", "false"]
    # sentence_similarity: TASK_TO_ANSWERS names possible_outputs, but the released data has none
    sim = build_rows("sentence_similarity", [("1", {"input": "Sentence 1: a Sentence 2: b", "output": "3 - probably"})], "f")
    assert sim[0]["answers"] == ["3 - probably"]


def test_cause_and_effect_gives_both_orders_numbered_over_the_file():
    rows = build_rows("cause_and_effect", [("1", {"cause": "C1.", "effect": "E1."}), ("2", {"cause": "C2.", "effect": "E2."})], "f")
    assert [(r["id"], r["source_id"], r["input"], r["answers"]) for r in rows] == [
        ("1", "1", "Sentence 1: C1. Sentence 2: E1.", ["C1."]),
        ("2", "1", "Sentence 1: E1. Sentence 2: C1.", ["C1."]),
        ("3", "2", "Sentence 1: C2. Sentence 2: E2.", ["C2."]),
        ("4", "2", "Sentence 1: E2. Sentence 2: C2.", ["C2."]),
    ]


def test_common_concept_joins_all_items():
    rows = build_rows("common_concept", [("1", {"concept": "c.", "items": ["a", "b", "c"], "all_common_concepts": ["c.", "d."]})], "f")
    assert rows[0]["input"] == "a, b, c" and rows[0]["answers"] == ["c.", "d."]


def test_prebuilt_rows_are_taken_as_they_are():
    rows = build_rows("cause_and_effect", [("1", {"input": "Sentence 1: x Sentence 2: y", "answers": ["x"], "output": "x"})], "f")
    assert rows == [{"id": "1", "source_id": "1", "input": "Sentence 1: x Sentence 2: y", "answers": ["x"], "output": "x"}]


def test_missing_field_names_file_example_and_field():
    with pytest.raises(ValueError, match=r"data/rhymes\.json: example '3': example lacks the field 'other_rhymes'"):
        build_rows("rhymes", [("3", {"input": "a", "output": "b"})], "data/rhymes.json")


def test_names_are_harness_safe():
    assert len({ii_id(t) for t in INDUCTION_TASKS}) == 24
    assert all("-" not in ii_id(t) for t in INDUCTION_TASKS)
    assert source_name("instructeval_ii_translation_en_fr") == "translation_en-fr"


def test_local_file_missing_is_a_user_error_naming_the_path(tmp_path):
    with pytest.raises(UserError, match=str(tmp_path / "instruction_induction/raw/execute/sum.json")):
        source.raw_path("execute", "sum", tmp_path)


def test_download_location_is_pinned_and_cached(tmp_path, monkeypatch):
    assert source.RAW_URL.format(commit=source.SOURCE_COMMIT, split="execute", task="sum") == (
        "https://raw.githubusercontent.com/orhonovich/instruction-induction/"
        "f7304ae0a35239c9819a08f93fd58426f6b4e4c1/data/raw/execute/sum.json")
    mirror = tmp_path / "mirror" / source.SOURCE_COMMIT / "execute"
    mirror.mkdir(parents=True)
    (mirror / "sum.json").write_text(json.dumps({"examples": {"1": {"input": "1 2", "output": "3"}}}))
    base = (tmp_path / "mirror").as_uri() + "/{commit}/{split}/{task}.json"
    cache = tmp_path / "cache"
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    path = source.download("execute", "sum", base_url=base, cache_dir=cache)
    assert path == cache / "instruction_induction" / source.SOURCE_COMMIT / "raw/execute/sum.json"
    assert json.loads(path.read_text())["examples"]["1"]["output"] == "3"
    (mirror / "sum.json").unlink()  # a second call reads the cached copy
    assert source.download("execute", "sum", base_url=base, cache_dir=cache) == path
    with pytest.raises(UserError, match=r"could not download .*mirror/.*/execute/diff\.json"):
        source.download("execute", "diff", base_url=base, cache_dir=cache)


def test_offline_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(UserError, match="is not cached and downloads are off"):
        source.download("execute", "sum", base_url="file:///nonexistent/{commit}/{split}/{task}.json", cache_dir=tmp_path)


def test_shared_data_row_counts(shared_data_dir):
    counts = {}
    for task in INDUCTION_TASKS:
        path = source.local_path(shared_data_dir, "execute", task)
        counts[task] = len(build_rows(task, source.read_examples(path, task), str(path)))
    assert counts["cause_and_effect"] == 50 and counts["common_concept"] == 16 and counts["informal_to_formal"] == 15
    assert all(n == 100 for t, n in counts.items() if t not in ("cause_and_effect", "common_concept", "informal_to_formal"))
