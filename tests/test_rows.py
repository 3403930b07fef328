"""Malformed data is refused when the task loads it, with the file and line (or split and row),
the field and the expected values -- never rendered (``News: None``), scored as a wrong answer,
or turned into an extra demo class; and never a pyarrow, codec or json traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

from instructeval_tasks.data import DataFileError, load_hf_split, read_jsonl_lines
from instructeval_tasks.errors import UserError
from instructeval_tasks.options import DATA_DIR_ENV
from instructeval_tasks.preview import build_task
from instructeval_tasks.rows import ROW_FIELDS, DataRowError, check_dataset, row_problem
from instructeval_tasks.specs import TASK_SPECS, get_spec

REPO_ROOT = Path(__file__).resolve().parents[1]
LOCAL_DIRS = {name: spec.local_dir for name, spec in TASK_SPECS.items()}


@pytest.fixture(autouse=True)
def no_data_dir_env(monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)


def _write(root: Path, task: str, rows: dict[str, list]) -> Path:
    folder = root / LOCAL_DIRS[task]
    folder.mkdir(parents=True, exist_ok=True)
    for split, lines in rows.items():
        (folder / f"{split}.jsonl").write_bytes(
            b"".join((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n" for line in lines)
        )
    return root


def _with_row(tiny_rows, task: str, split: str, index: int, row) -> dict[str, list]:
    """The tiny rows of ``task`` with row ``index`` of ``split`` replaced by ``row`` (a dict or raw bytes)."""
    rows = {s: list(r) for s, r in tiny_rows[LOCAL_DIRS[task]].items()}
    rows[split][index] = row
    return rows


# ------------------------------------------------------------------------------ eval rows


@pytest.mark.parametrize(
    "change,field,shown",
    [
        ({"drop": "text"}, "text", "is missing"),
        ({"text": None}, "text", "is null"),
        ({"text": 12345}, "text", "is 12345 (int)"),
        ({"drop": "label"}, "label", "is missing"),
        ({"label": None}, "label", "is null"),
        ({"label": 7}, "label", "is 7 (int)"),
        ({"label": -1}, "label", "is -1 (int)"),
        ({"label": "2"}, "label", "is '2' (str)"),
        ({"label": 2.0}, "label", "is 2.0 (float)"),
        ({"label": True}, "label", "is True (bool)"),
    ],
)
def test_a_bad_agnews_eval_row_names_file_line_field_and_expected_values(tmp_path, tiny_rows, change, field, shown):
    row = dict(tiny_rows["ag_news"]["eval"][2])
    if "drop" in change:
        del row[change["drop"]]
    else:
        row.update(change)
    root = _write(tmp_path, "agnews", _with_row(tiny_rows, "agnews", "eval", 2, row))
    with pytest.raises(DataRowError) as info:
        build_task("agnews", {"data_dir": str(root)}, 0)
    expected = "a string" if field == "text" else "one of 0, 1, 2, 3 (an integer)"
    assert str(info.value) == (
        f"{root / 'ag_news' / 'eval.jsonl'}:3: field {field!r} {shown}; expected {expected} for instructeval_agnews. "
        f"Fix or remove the row."
    )
    assert isinstance(info.value, UserError)


def test_line_numbers_count_blank_lines(tmp_path, tiny_rows):
    rows = _with_row(tiny_rows, "imdb", "eval", 1, {"text": "fine", "label": 2})
    rows["eval"].insert(0, b"")  # a blank first line: the bad row is on line 3
    root = _write(tmp_path, "imdb", rows)
    with pytest.raises(DataRowError, match=r"eval\.jsonl:3: field 'label' is 2 \(int\); expected one of 0, 1 \(an integer\)"):
        build_task("imdb", {"data_dir": str(root)}, 0)


def test_a_train_label_outside_the_classes_is_refused(tmp_path, tiny_rows):
    # It used to become a fifth class of the balanced demo draw.
    rows = _with_row(tiny_rows, "agnews", "train", 4, {"text": "An extra class.", "label": 4})
    root = _write(tmp_path, "agnews", rows)
    with pytest.raises(DataRowError, match=r"ag_news/train\.jsonl:5: field 'label' is 4 \(int\); expected one of 0, 1, 2, 3"):
        build_task("agnews", {"data_dir": str(root)}, 6)


@pytest.mark.parametrize(
    "task,split,row,field,expected",
    [
        ("boolq", "eval", {"question": "q", "passage": "p", "answer": 1}, "answer", "one of false, true (true or false)"),
        ("boolq", "train", {"question": "q", "passage": None, "answer": True}, "passage", "a string"),
        ("anli", "eval", {"premise": "p", "hypothesis": "h", "label": 3}, "label", "one of 0, 1, 2 (an integer)"),
        ("emotion", "train", {"text": "t", "label": "joy"}, "label", "one of 0, 1, 2, 3 (an integer)"),
        ("cosmosqa", "eval", {"context": "c", "question": "q", "answer0": "a", "answer1": "b", "answer2": "c",
                              "label": 0}, "answer3", "a string"),
        ("hellaswag", "eval", {"ctx": "c", "endings": ["a", "b", "c", "d"], "label": 2}, "label",
         "one of '0', '1', '2', '3' (a string)"),
        ("hellaswag", "train", {"ctx": "c", "endings": ["a", "b", "c"], "label": "2"}, "endings", "a list of 4 strings"),
        ("nq_open", "eval", {"question": "q", "answer": []}, "answer", "a non-empty list of strings"),
        ("nq_open", "eval", {"question": "q", "answer": "Paris"}, "answer", "a non-empty list of strings"),
        ("triviaqa", "train", {"question": "q", "answer": {"value": "x"}}, "answer",
         'an object whose "aliases" is a non-empty list of strings'),
    ],
)
def test_every_task_checks_its_fields(tmp_path, tiny_rows, task, split, row, field, expected):
    root = _write(tmp_path, task, _with_row(tiny_rows, task, split, 1, row))
    with pytest.raises(DataRowError) as info:
        build_task(task, {"data_dir": str(root)}, 0)
    message = str(info.value)
    assert message.startswith(f"{root / LOCAL_DIRS[task] / (split + '.jsonl')}:2: field {field!r} ")
    assert f"; expected {expected} for instructeval_{task}." in message


def test_the_tiny_and_shared_rows_are_valid(tiny_rows, shared_data_dir):
    for name, spec in TASK_SPECS.items():
        for split, rows in tiny_rows[spec.local_dir].items():
            assert all(row_problem(name, row) is None for row in rows), (name, split)
        for split in ("train", "eval"):
            path = shared_data_dir / spec.local_dir / f"{split}.jsonl"
            if path.is_file():
                assert [n for n, row in read_jsonl_lines(path) if row_problem(name, row)] == [], path


def test_row_fields_cover_every_task_and_its_text_fields():
    assert set(ROW_FIELDS) == set(TASK_SPECS)
    for name, spec in TASK_SPECS.items():
        assert set(spec.text_fields) <= set(ROW_FIELDS[name])
        if spec.label_field:
            assert spec.label_field in ROW_FIELDS[name]


# ------------------------------------------------------------------------------ HF-loaded splits


def _hf_json(tmp_path: Path, rows: list[dict], name: str = "rows") -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_an_hf_split_is_checked_with_split_and_row(tmp_path, tiny_rows):
    rows = [dict(r) for r in tiny_rows["ag_news"]["eval"]]
    rows[5]["label"] = 7
    path = _hf_json(tmp_path, rows)
    with pytest.raises(DataRowError) as info:
        load_hf_split("json", None, "train", get_spec("agnews"), data_files={"train": str(path)})
    assert str(info.value) == (
        "HF dataset 'json', split 'train', row 5: field 'label' is 7 (int); expected one of 0, 1, 2, 3 (an integer) "
        "for instructeval_agnews. Fix or remove the row."
    )


def test_an_hf_split_through_the_task(monkeypatch, tmp_path, tiny_rows):
    """The task's own HF path (no data_dir): ``datasets.load_dataset`` answers from local files."""
    rows = {split: [dict(r) for r in tiny_rows["boolq"][split]] for split in ("train", "eval")}
    del rows["eval"][3]["passage"]
    files = {"train": _hf_json(tmp_path, rows["train"], "train"), "validation": _hf_json(tmp_path, rows["eval"], "validation")}
    real_load = datasets.load_dataset

    def offline_load(path, name=None, split=None, **kwargs):
        assert path == "google/boolq"
        return real_load("json", data_files={split: str(files[split])}, split=split)

    monkeypatch.setattr(datasets, "load_dataset", offline_load)
    # (pyarrow's JSON reader fills a field absent from one row with null)
    with pytest.raises(DataRowError, match=r"^HF dataset 'google/boolq', split 'validation', row 3: field 'passage' is null; expected a string"):
        build_task("boolq", {}, 0)
    rows["eval"][3]["passage"] = "restored"
    files["validation"] = _hf_json(tmp_path, rows["eval"], "validation_fixed")
    task = build_task("boolq", {}, 0)
    assert task.dump_config()["metadata"]["data_source"] == "hf:google/boolq"


@pytest.mark.parametrize(
    "task,rows,index,field",
    [
        ("agnews", [{"text": "a", "label": 0}, {"text": "b", "label": 3}, {"text": "c", "label": 9}], 2, "label"),
        ("agnews", [{"text": "a", "label": 0}, {"text": None, "label": 1}], 1, "text"),
        ("boolq", [{"question": "q", "passage": "p", "answer": True}, {"question": "q", "passage": "p", "answer": None}], 1, "answer"),
        ("hellaswag", [{"ctx": "c", "endings": ["a", "b", "c", "d"], "label": "0"}, {"ctx": "c", "endings": ["a", None, "c", "d"], "label": "1"}], 1, "endings"),
        ("nq_open", [{"question": "q", "answer": ["a"]}, {"question": "q", "answer": []}], 1, "answer"),
        ("triviaqa", [{"question": "q", "answer": {"aliases": ["a"]}}, {"question": "q", "answer": {"aliases": []}}], 1, "answer"),
    ],
)
def test_check_dataset_finds_the_first_bad_row(task, rows, index, field):
    dataset = datasets.Dataset.from_list(rows)
    with pytest.raises(DataRowError, match=rf"^row {index}: field {field!r} "):
        check_dataset(task, dataset, lambda i: f"row {i}")
    check_dataset(task, datasets.Dataset.from_list(rows[:index]), lambda i: f"row {i}")  # the good rows pass


def test_check_dataset_reports_the_earliest_row_over_all_fields():
    rows = [{"text": "a", "label": 0}, {"text": "b", "label": 9}, {"text": None, "label": 1}]
    with pytest.raises(DataRowError, match=r"^row 1: field 'label'"):
        check_dataset("agnews", datasets.Dataset.from_list(rows), lambda i: f"row {i}")


# ------------------------------------------------------------------------------ unreadable files


def test_a_non_utf8_byte_names_file_line_and_column(tmp_path, tiny_rows):
    rows = _with_row(tiny_rows, "agnews", "eval", 3, b'{"text": "caf\xe9", "label": 1}')
    root = _write(tmp_path, "agnews", rows)
    with pytest.raises(DataFileError) as info:
        build_task("agnews", {"data_dir": str(root)}, 0)
    assert str(info.value) == (
        f"{root / 'ag_news' / 'eval.jsonl'}:4: byte 0xe9 at column 14 is not valid UTF-8; save the file as UTF-8"
    )
    assert isinstance(info.value, UserError)


def test_invalid_json_names_file_line_and_column(tmp_path, tiny_rows):
    rows = _with_row(tiny_rows, "imdb", "train", 0, b'{"text": "x", "label": 0,}')
    root = _write(tmp_path, "imdb", rows)
    with pytest.raises(DataFileError, match=r"imdb/train\.jsonl:1: not valid JSON \(Expecting property name enclosed in double quotes at column 26\)"):
        build_task("imdb", {"data_dir": str(root)}, 0)


def test_a_nesting_bomb_is_a_data_error(tmp_path, tiny_rows):
    bomb = b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b', "label": 0}'
    root = _write(tmp_path, "imdb", _with_row(tiny_rows, "imdb", "eval", 0, bomb))
    with pytest.raises(DataFileError, match=r"imdb/eval\.jsonl:1: JSON nested too deeply"):
        build_task("imdb", {"data_dir": str(root)}, 0)


def test_a_byte_order_mark_is_allowed(tmp_path, tiny_rows):
    rows = {s: list(r) for s, r in tiny_rows["imdb"].items()}
    rows["eval"][0] = b"\xef\xbb\xbf" + json.dumps(rows["eval"][0]).encode()
    root = _write(tmp_path, "imdb", rows)
    assert build_task("imdb", {"data_dir": str(root)}, 0).dump_config()["metadata"]["eval_size"] == len(rows["eval"])


def test_instructeval_prints_one_line_for_a_bad_row(tmp_path, tiny_rows):
    root = _write(tmp_path, "agnews", _with_row(tiny_rows, "agnews", "eval", 0, {"text": "x", "label": "2"}))
    exe = Path(sys.executable).with_name("instructeval")
    done = subprocess.run(
        [str(exe) if exe.exists() else "instructeval", "prompt", "agnews", "--data-dir", str(root)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        f"instructeval: error: {root / 'ag_news' / 'eval.jsonl'}:1: field 'label' is '2' (str); "
        f"expected one of 0, 1, 2, 3 (an integer) for instructeval_agnews. Fix or remove the row."
    )


def test_an_extra_field_that_changes_type_names_both_lines(tmp_path, tiny_rows):
    # Fields the task does not read are kept; pyarrow needs one type per field across rows.
    rows = {s: [dict(r) for r in rs] for s, rs in tiny_rows["ag_news"].items()}
    rows["train"][0]["uid"] = 17
    rows["train"][6]["uid"] = "u-6"
    root = _write(tmp_path, "agnews", rows)
    with pytest.raises(DataFileError) as info:
        build_task("agnews", {"data_dir": str(root)}, 0)
    assert str(info.value) == (
        f"{root / 'ag_news' / 'train.jsonl'}:7: field 'uid' is a string but a number on line 1; "
        f"a field must have one type in every row"
    )


def test_a_local_eval_file_may_not_repeat_an_item(tiny_data_copy, tiny_rows):
    """A repeated item weighs twice in every accuracy: refused with both line numbers."""
    from instructeval_tasks.data import load_local_split
    from instructeval_tasks.rows import DataRowError
    from instructeval_tasks.specs import get_spec

    rows = tiny_rows["ag_news"]["eval"]
    repeated = rows + [dict(rows[1], id="another id")]  # equal in every field the task reads
    path = tiny_data_copy / "ag_news" / "eval.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in repeated), encoding="utf-8")
    with pytest.raises(DataRowError, match=rf"eval.jsonl:{len(repeated)}: the same item as line 2 .*Remove the duplicate"):
        load_local_split(tiny_data_copy, get_spec("agnews"), "eval")
    # a train split may repeat rows (the real IMDB and TweetEval train splits do)
    train = tiny_data_copy / "ag_news" / "train.jsonl"
    train.write_text(train.read_text() + train.read_text().splitlines(keepends=True)[0], encoding="utf-8")
    assert len(load_local_split(tiny_data_copy, get_spec("agnews"), "train")) > 0


def test_repeated_items_of_an_hf_split_are_counted_and_recorded(tiny_rows, monkeypatch):
    """An HF split is the paper's data: repeats are kept, warned about and recorded."""
    import datasets

    from instructeval_tasks import data as data_module
    from instructeval_tasks.preview import build_task

    rows = tiny_rows["ag_news"]
    splits = {"train": rows["train"], "test": rows["eval"] + rows["eval"][:2]}
    monkeypatch.setattr(data_module.datasets, "load_dataset",
                        lambda path, name, split, **kw: datasets.Dataset.from_list(splits[split]))
    task = build_task("agnews", {}, 0)
    assert task.dump_config()["metadata"]["repeated_items"] == 2
