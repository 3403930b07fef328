"""Task options from metadata, and the errors a user sees for bad options or missing data."""

from __future__ import annotations

import json

import pytest

from instructeval_banks import BankError
from instructeval_tasks.data import DatasetNotFound, load_local_split, read_jsonl
from instructeval_tasks.instruction import resolve_instruction
from instructeval_tasks.options import DATA_DIR_ENV, OptionError, TaskOptions
from instructeval_tasks.preview import build_task, render_prompt
from instructeval_tasks.specs import get_spec


@pytest.fixture(autouse=True)
def no_data_dir_env(monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)


# ------------------------------------------------------------------------------ parsing


def test_defaults():
    options = TaskOptions.from_metadata(None)
    assert options == TaskOptions.from_metadata({})
    assert options.instruction is None and options.method is None
    assert options.instruction_index is None and options.instruction_id is None
    assert options.demo_seed == 0 and options.test_seed == 0
    assert options.data_dir is None and options.test_sample is None and options.truncate_words is None


def test_values_from_the_cli_arrive_as_strings_or_ints():
    options = TaskOptions.from_metadata(
        {"demo_seed": "3", "instruction_index": 2, "test_sample": "100", "truncate_words": 100, "instruction_id": 7}
    )
    assert (options.demo_seed, options.instruction_index, options.test_sample, options.truncate_words) == (3, 2, 100, 100)
    assert options.instruction_id == "7"
    assert TaskOptions.from_metadata({"instruction": 3}).instruction == "3"  # `--metadata instruction=3`


def test_unrelated_metadata_keys_are_ignored():
    # the harness merges model_args and the YAML's own metadata into the same dict
    options = TaskOptions.from_metadata({"version": 1.0, "pretrained": "x", "dtype": "float32", "instructeval_task": "agnews"})
    assert options == TaskOptions()


@pytest.mark.parametrize(
    "key,value",
    [
        ("demo_seed", "abc"),
        ("demo_seed", True),
        ("demo_seed", 1.5),
        ("demo_seed", [1]),
        ("instruction_index", "first"),
        ("instruction_index", -1),
        ("instruction_index", False),
        ("test_sample", 0),
        ("test_sample", "ten"),
        ("test_seed", "1.5"),
        ("truncate_words", 0),
        ("truncate_words", {"n": 100}),
        ("order_seed", "x"),
        ("perturbation_seed", 2.0),
    ],
)
def test_integer_type_errors_name_the_key(key, value):
    with pytest.raises(OptionError) as info:
        TaskOptions.from_metadata({key: value})
    assert f"metadata {key}=" in str(info.value)


@pytest.mark.parametrize("key", ["method", "data_dir", "bank_dir", "score_tokenizer"])
@pytest.mark.parametrize("value", [3, ["a"], {"a": 1}, True])
def test_string_type_errors_name_the_key(key, value):
    with pytest.raises(OptionError) as info:
        TaskOptions.from_metadata({key: value})
    message = str(info.value)
    assert f"metadata {key}=" in message and "string" in message


@pytest.mark.parametrize("key,value", [("perturbation", "heavy"), ("perturbation_mode", "global")])
def test_choice_errors_name_the_key_and_the_choices(key, value):
    with pytest.raises(OptionError) as info:
        TaskOptions.from_metadata({key: value})
    assert f"metadata {key}='{value}'" in str(info.value)


def test_option_error_surfaces_through_task_construction(tiny_data_dir):
    with pytest.raises(OptionError, match="metadata demo_seed='abc'"):
        build_task("agnews", {"data_dir": str(tiny_data_dir), "demo_seed": "abc"}, 0)


# ------------------------------------------------------------------------------ data dir


def test_data_dir_env_fallback(monkeypatch, tiny_data_dir):
    monkeypatch.setenv(DATA_DIR_ENV, str(tiny_data_dir))
    assert TaskOptions.from_metadata({}).data_dir == str(tiny_data_dir)
    assert TaskOptions.from_metadata({"data_dir": "/elsewhere"}).data_dir == "/elsewhere"  # metadata wins
    task = build_task("imdb", {}, 0)  # no data_dir in metadata: the env var is used
    assert render_prompt(task, 0)[0] == "Review: An instant classic.\nSentiment:"
    assert task.dump_config()["metadata"]["data_source"].endswith("imdb")


def test_empty_env_var_means_unset(monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, "")
    assert TaskOptions.from_metadata({}).data_dir is None


def test_data_source_is_recorded(tiny_data_dir):
    meta = build_task("boolq", {"data_dir": str(tiny_data_dir)}, 0).dump_config()["metadata"]
    assert meta["data_source"] == str(tiny_data_dir.resolve() / "boolq")
    assert meta["eval_size"] == 8


def test_missing_data_dir_names_the_looked_for_path(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(DatasetNotFound) as info:
        build_task("agnews", {"data_dir": str(missing)}, 0)
    message = str(info.value)
    assert str(missing / "ag_news" / "train.jsonl") in message
    assert "does not exist" in message
    assert DATA_DIR_ENV in message
    assert isinstance(info.value, FileNotFoundError)


def test_missing_split_file_names_the_looked_for_path(tmp_path, tiny_data_dir):
    (tmp_path / "tweet_eval_emotion").mkdir()
    (tmp_path / "tweet_eval_emotion" / "train.jsonl").write_text((tiny_data_dir / "tweet_eval_emotion" / "train.jsonl").read_text())
    with pytest.raises(DatasetNotFound) as info:
        build_task("emotion", {"data_dir": str(tmp_path)}, 0)
    message = str(info.value)
    assert str(tmp_path / "tweet_eval_emotion" / "eval.jsonl") in message
    assert "does not exist" not in message  # the directory itself is there


def test_malformed_jsonl_line_names_file_and_line(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "a", "label": 0}\n\n{"text": "b", "label": 1\n', encoding="utf-8")
    with pytest.raises(ValueError) as info:
        read_jsonl(path)
    assert f"{path}:3:" in str(info.value)


def test_non_object_jsonl_line_names_file_and_line(tmp_path):
    path = tmp_path / "eval.jsonl"
    path.write_text('{"text": "a", "label": 0}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}:2:"):
        read_jsonl(path)


def test_malformed_jsonl_through_the_task(tmp_path, tiny_data_dir):
    folder = tmp_path / "ag_news"
    folder.mkdir()
    (folder / "train.jsonl").write_text((tiny_data_dir / "ag_news" / "train.jsonl").read_text())
    lines = (tiny_data_dir / "ag_news" / "eval.jsonl").read_text().splitlines()
    lines[4] = lines[4][:-1]  # drop the closing brace of the 5th row
    (folder / "eval.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=f"{folder / 'eval.jsonl'}:5:"):
        build_task("agnews", {"data_dir": str(tmp_path)}, 0)


def test_rows_missing_task_fields(tmp_path):
    folder = tmp_path / "anli"
    folder.mkdir()
    (folder / "train.jsonl").write_text(json.dumps({"premise": "p", "label": 0}) + "\n")
    with pytest.raises(ValueError) as info:
        load_local_split(tmp_path, get_spec("anli"), "train")
    assert "hypothesis" in str(info.value) and str(folder / "train.jsonl") in str(info.value)


# ------------------------------------------------------------------------------ instruction choice


def test_literal_instruction_and_index_conflict():
    spec = get_spec("agnews")
    for extra in ({"instruction_index": 1}, {"instruction_id": "generic-1"}, {"instruction_index": 0}):
        options = TaskOptions.from_metadata({"instruction": "Classify.", "method": "generic", **extra})
        with pytest.raises(OptionError) as info:
            resolve_instruction(options, spec)
        assert "'instruction'" in str(info.value) and "instruction_index" in str(info.value)


def test_conflict_surfaces_through_task_construction(tiny_data_dir):
    with pytest.raises(OptionError, match="keep one"):
        build_task("agnews", {"data_dir": str(tiny_data_dir), "instruction": "X", "instruction_index": 2}, 0)


def test_unknown_method_error_lists_the_available_methods(tiny_data_dir):
    with pytest.raises(BankError) as info:
        build_task("agnews", {"data_dir": str(tiny_data_dir), "method": "no_such_method"}, 0)
    message = str(info.value)
    assert "'no_such_method'" in message and "null" in message and "generic" in message


def test_instruction_resolution_records():
    spec = get_spec("anli")
    literal = resolve_instruction(TaskOptions.from_metadata({"instruction": "Decide."}), spec)
    assert (literal.text, literal.method, literal.entry_id, literal.index) == ("Decide.", "literal", "literal", None)
    named = resolve_instruction(TaskOptions.from_metadata({"instruction": "Decide.", "method": "ape"}), spec)
    assert named.method == "ape"  # a literal may say which method produced it
    bank = resolve_instruction(TaskOptions.from_metadata({"method": "generic", "instruction_index": 3}), spec)
    assert (bank.text, bank.method, bank.entry_id, bank.index) == (
        "Find the best solution to the question below:", "generic", "generic-3", 3
    )
    null = resolve_instruction(TaskOptions.from_metadata({}), spec)
    assert (null.text, null.method, null.description) == ("", "null", "")
    blank = resolve_instruction(TaskOptions.from_metadata({"instruction": "   "}), spec)
    assert blank.method == "null" and blank.description == ""


def test_bank_dir_option(tmp_path, tiny_data_dir):
    (tmp_path / "mine.yaml").write_text(
        "method: mine\ntasks: [imdb]\nprovenance: {source: test}\nentries:\n  - {id: m0, text: Rate it.}\n  - {id: m1, text: Judge it.}\n"
    )
    task = build_task("imdb", {"data_dir": str(tiny_data_dir), "bank_dir": str(tmp_path), "method": "mine", "instruction_id": "m1"}, 0)
    assert render_prompt(task, 0)[0] == "Judge it.\n\nReview: An instant classic.\nSentiment:"
    meta = task.dump_config()["metadata"]
    assert (meta["method"], meta["instruction_id"], meta["instruction_index"]) == ("mine", "m1", 1)


@pytest.mark.parametrize("task", ["agnews", "nq_open"])
def test_too_large_test_sample_names_the_task_and_the_key(tiny_data_dir, task):
    with pytest.raises(ValueError) as info:
        build_task(task, {"data_dir": str(tiny_data_dir), "test_sample": 100}, 0)
    message = str(info.value)
    assert f"instructeval_{task}" in message and "test_sample" in message


@pytest.mark.parametrize("key,value", [("instruction", ["Classify."]), ("instruction", {"text": "x"}), ("instruction_id", ["generic-1"])])
def test_container_instruction_is_a_type_error(key, value):
    with pytest.raises(OptionError) as info:
        TaskOptions.from_metadata({key: value})
    assert f"metadata {key}=" in str(info.value)
