"""``instructeval run``: bad options are one-line errors before the model loads, --dry-run writes
nothing, labels never leave --output, leftover temporary files are cleaned."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from instructeval_banks import BankEntry
from instructeval_tasks import cli
from instructeval_tasks.sweep import build_plan, get_profile, run_sweep
from instructeval_tasks.sweep import chunk
from instructeval_tasks.sweep.plan import PlanError
from instructeval_tasks.sweep.store import model_label_from_args

REPO = Path(__file__).resolve().parents[2]
SMALL = ["--methods", "null", "--settings", "zero_shot", "--instructions-per-method", "1", "--test-sample", "2"]


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.fixture
def no_model_load(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded before the options were checked")

    monkeypatch.setattr(chunk, "load_model", refuse)


def _cli(capsys, args: list[str]) -> tuple[int, str]:
    code = cli.main(["run", *args])
    err = capsys.readouterr().err
    return code, err


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("instructeval: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ---------------------------------------------------------------- item 9: options checked up front

BAD_OPTIONS = [
    (["--tasks", "agnewz"], r"unknown task\(s\) \['agnewz'\] \(did you mean 'agnews'\?\)"),
    (["--methods", "generik"], r"unknown method\(s\) \['generik'\] \(did you mean 'generic'\?\)"),
    (["--profile", "fast"], r"unknown profile 'fast' \(--profile\)"),
    (["--settings", "zero_shot,fewshot"], r"unknown setting\(s\) \['fewshot'\] in --settings"),
    (["--test-sample", "0"], r"test_sample \(--test-sample\) must be >= 1"),
    (["--test-sample", "500"], r"test_sample=500 cannot be drawn from an eval split of 8 rows"),
    (["--selections", "-1"], r"n_selections \(--selections\) must be >= 0"),
    (["--truncate-words", "0"], r"truncate_words \(--truncate-words\) must be >= 1"),
    (["--model", "hff"], r"--model 'hff': no such harness backend \(did you mean 'hf'\?\)"),
    (["--model_args", "pretrained"], r"--model_args: 'pretrained' is not key=value"),
    (["--batch_size", "eight"], r"--batch_size 'eight': expected a positive integer, 'auto' or 'auto:N'"),
    (["--data-dir", "/nonexistent/instructeval-data"], r"no train split at /nonexistent/instructeval-data"),
    (["--model_args", "pretrained=/nonexistent-instructeval/model"],
     r"--model_args pretrained=/nonexistent-instructeval/model: no such folder; /nonexistent-instructeval does not exist either"),
    (["--settings", "few_shot", "--num-fewshot", "50"],
     r"cannot draw 50 demonstrations from a train split of \d+ rows: .*; use a smaller K \(--num-fewshot\)"),
]


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
@pytest.mark.parametrize("bad,message", BAD_OPTIONS, ids=[" ".join(b) for b, _ in BAD_OPTIONS])
def test_bad_option_is_one_line_exit_2_before_the_model_loads(bad, message, dry_run, tmp_path, tiny_model_dir,
                                                              tiny_data_dir, capsys, no_model_load):
    args = {"--model": "hf", "--model_args": f"pretrained={tiny_model_dir},dtype=float32", "--tasks": "agnews",
            "--data-dir": str(tiny_data_dir), "--output": str(tmp_path / "out"), "--device": "cpu"}
    small = list(SMALL)
    for i in range(0, len(bad), 2):
        if bad[i] in small:
            del small[small.index(bad[i]):small.index(bad[i]) + 2]
        args[bad[i]] = bad[i + 1]
    argv = [x for kv in args.items() for x in kv] + small + (["--dry-run"] if dry_run else [])
    code, err = _cli(capsys, argv)
    assert code == 2, err
    assert re.search(message, _one_error_line(err)), err
    assert not (tmp_path / "out").exists()  # nothing written


def test_file_typed_or_unwritable_output_is_refused(tmp_path, tiny_model_dir, tiny_data_dir, capsys, no_model_load):
    common = ["--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32", "--tasks", "agnews",
              "--data-dir", str(tiny_data_dir), "--device", "cpu", *SMALL]
    a_file = tmp_path / "runs"
    a_file.write_text("not a folder")
    for output, expected in ((a_file, r"--output .*/runs: --output .*/runs is a file, not a folder"),
                             (a_file / "sub", r"a parent of --output .*/runs is a file")):
        for extra in ([], ["--dry-run"]):
            code, err = _cli(capsys, [*common, "--output", str(output), *extra])
            assert code == 2 and re.search(expected, _one_error_line(err)), err
    label_file = tmp_path / "out" / "tiny_model0"
    label_file.parent.mkdir()
    label_file.write_text("")
    code, err = _cli(capsys, [*common, "--output", str(tmp_path / "out"), "--model-label", "tiny_model0"])
    assert code == 2 and "the label folder" in _one_error_line(err) and "is a file" in err
    # A place nobody may create folders in (even root): sysfs.
    if Path("/sys").is_dir() and _mkdir_fails(Path("/sys/instructeval-probe")):
        code, err = _cli(capsys, [*common, "--output", "/sys/instructeval-test"])
        line = _one_error_line(err)
        assert code == 2 and re.search(r"cannot create /sys/instructeval-test/\S+ \(|/sys is not writable", line), err


def _mkdir_fails(path: Path) -> bool:
    try:
        path.mkdir()
    except OSError:
        return True
    path.rmdir()
    return False


# ---------------------------------------------------------------- item 6: labels stay inside --output

@pytest.mark.parametrize("label", ["../x", "/tmp/instructeval-abs-label", "a/b", "..", "a\\b"])
def test_label_that_leaves_output_is_refused(label, tmp_path, tiny_model_dir, tiny_data_dir, capsys, no_model_load):
    out = tmp_path / "nest" / "out"
    code, err = _cli(capsys, ["--model", "hf", "--model_args", f"pretrained={tiny_model_dir}", "--tasks", "agnews",
                              "--data-dir", str(tiny_data_dir), "--output", str(out), "--model-label", label, *SMALL])
    assert code == 2
    assert f"--model-label {label!r} is not a plain folder name" in _one_error_line(err)
    assert _listing(tmp_path) == [] and not Path("/tmp/instructeval-abs-label").exists()


def test_derived_labels_are_plain_names():
    assert model_label_from_args("hf", "pretrained=/models/smollm2/") == "smollm2"
    assert model_label_from_args("hf", "pretrained=/models/x/..") == "models"
    assert model_label_from_args("hf", "pretrained=.") == Path.cwd().name


@pytest.mark.parametrize("bad_id", ["../../escape", "a/b", "a\\b", ".."])
def test_bank_ids_with_path_separators_are_refused(bad_id):
    class OneEntryBank:
        def entries(self, method, task, model=None):
            return [BankEntry(id=bad_id, text="Do it.", method=method, task=task, index=0, source_file="my_bank.yaml")]

    with pytest.raises(PlanError, match=r"my_bank.yaml: entry id .* is not a plain name"):
        build_plan(["agnews"], ["generic"], get_profile("quick"), OneEntryBank())


# ---------------------------------------------------------------- dry-run and temp files (items 9, 11)

def _small_sweep(model_dir: Path, data_dir: Path, out: Path, **extra):
    return run_sweep(model="hf", model_args=f"pretrained={model_dir},dtype=float32", tasks="agnews", methods="null",
                     output=out, overrides={"instructions_per_method": 1, "test_sample": 2, "settings": ["zero_shot"]},
                     data_dir=str(data_dir), device="cpu", progress=False, **extra)


def test_dry_run_writes_nothing_new_or_existing(tmp_path, tiny_model_dir, tiny_data_dir):
    out = tmp_path / "out"
    report = _small_sweep(tiny_model_dir, tiny_data_dir, out, dry_run=True)
    assert (report.planned, report.skipped, report.evaluated) == (1, 0, 0)
    assert not out.exists()
    _small_sweep(tiny_model_dir, tiny_data_dir, out)
    (out / tiny_model_dir.name / ".instructeval.lock").unlink()
    (out / tiny_model_dir.name / ".instructeval.store.lock").unlink()
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    report = _small_sweep(tiny_model_dir, tiny_data_dir, out, dry_run=True)
    assert (report.planned, report.skipped) == (1, 1)
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before  # no lock file, no sweep.json rewrite


def test_temp_file_left_by_a_kill_is_cleaned_on_the_next_run(tmp_path, tiny_model_dir, tiny_data_dir):
    out = tmp_path / "out"
    _small_sweep(tiny_model_dir, tiny_data_dir, out)
    folder = out / tiny_model_dir.name
    # A real kill -9 in the middle of an atomic write: the temp file is written, the rename never happens.
    script = ("import os, signal, sys; from pathlib import Path; from instructeval_tasks.sweep import store; "
              "os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL); "
              "store.atomic_write_text(Path(sys.argv[1]) / 'results_killed.json', '{}')")
    code = subprocess.run([sys.executable, "-c", script, str(folder)], cwd=REPO).returncode
    assert code == -signal.SIGKILL
    left = [p.name for p in folder.iterdir() if p.name.startswith(".results_killed.json.")]
    assert len(left) == 1
    ours = [Path(tempfile.mkstemp(prefix=prefix, dir=folder)[1]) for prefix in (".samples_v_2026.jsonl.", ".sweep.json.")]
    # Not ours, or not in the label folder: kept.
    others = [folder / ".notes.txt.abcd1234", folder / "results_keep.json.abcd1234", folder / ".sweep.json.toolong123",
              out / ".sweep.json.abcd1234"]
    (folder / "sub").mkdir()
    others.append(folder / "sub" / ".sweep.json.abcd1234")
    for path in others:
        path.write_text("x")

    dry = _small_sweep(tiny_model_dir, tiny_data_dir, out, dry_run=True)
    assert dry.skipped == 1 and (folder / left[0]).exists()  # a dry run removes nothing
    lines: list[str] = []
    again = _small_sweep(tiny_model_dir, tiny_data_dir, out, echo=lines.append)
    assert (again.skipped, again.evaluated) == (1, 0)
    assert not (folder / left[0]).exists() and not any(p.exists() for p in ours)
    assert all(p.exists() for p in others)
    assert any(line.startswith("removed 3 temporary file(s)") for line in lines), lines


def test_a_model_that_cannot_load_is_one_line_and_leaves_no_folder(tmp_path, tiny_data_dir, capsys):
    """A model folder without weights (or an unreachable hub id): one line naming the backend and the
    cause, exit 2, and no empty label folder left behind in --output."""
    empty = tmp_path / "empty_model"
    empty.mkdir()
    out = tmp_path / "new" / "out"
    code, err = _cli(capsys, ["--model", "hf", "--model_args", f"pretrained={empty}", "--tasks", "agnews",
                              "--data-dir", str(tiny_data_dir), "--output", str(out), "--device", "cpu", *SMALL])
    assert code == 2, err
    line = _one_error_line(err)
    assert f"--model hf --model_args pretrained={empty}: the model could not be loaded (" in line
    assert not (tmp_path / "new").exists()


def test_a_typo_in_the_model_folder_names_the_closest_one(tmp_path, tiny_model_dir, tiny_data_dir, capsys, no_model_load):
    typo = str(tiny_model_dir)[:-1] + "x"
    code, err = _cli(capsys, ["--model", "hf", "--model_args", f"pretrained={typo}", "--tasks", "agnews",
                              "--data-dir", str(tiny_data_dir), "--output", str(tmp_path / "out"), "--dry-run", *SMALL])
    assert code == 2
    assert _one_error_line(err).endswith(f"pretrained={typo}: no such folder (did you mean {str(tiny_model_dir)!r}?)")


def test_a_bad_integer_list_names_the_option_and_the_format(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--model", "hf", "--tasks", "agnews", "--output", "out", "--ordering-demo-seeds", "1,a"])
    assert exit_.value.code == 2
    assert _one_error_line(capsys.readouterr().err).startswith(
        "instructeval: error: argument --ordering-demo-seeds: '1,a' is not a comma list of integers, e.g. 0,1,2")


def test_a_negative_wait_lock_is_refused_and_the_option_alone_waits_without_limit(capsys):
    for value in ("-5", "nan"):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["run", "--model", "hf", "--tasks", "agnews", "--output", "out", "--wait-lock", value])
        assert exit_.value.code == 2
        assert _one_error_line(capsys.readouterr().err).startswith(
            f"instructeval: error: argument --wait-lock: '{value}' is not a number of seconds >= 0; give e.g. "
            "--wait-lock 600, or --wait-lock alone to wait without limit")
    parse = cli.build_parser().parse_args
    assert parse(["run", "--model", "hf", "--output", "o", "--wait-lock"]).wait_lock < 0  # RunLock: no limit
    assert parse(["run", "--model", "hf", "--output", "o", "--wait-lock", "0"]).wait_lock == 0


# ------------------------------------------------- the nine tasks' protocol options with harness tasks

def _harness_dry_run(capsys, tmp_path, tiny_model_dir, tiny_data_dir, *extra: str) -> tuple[int, str]:
    return _cli(capsys, ["--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32",
                         "--harness-tasks", "hellaswag", "--methods", "null", "--instructions-per-method", "1",
                         "--test-sample", "2", "--data-dir", str(tiny_data_dir), "--output", str(tmp_path / "out"),
                         "--dry-run", *extra])


def test_num_fewshot_without_the_nine_tasks_is_refused_pointing_at_the_nshot_syntax(tmp_path, tiny_model_dir, tiny_data_dir,
                                                                                   capsys, no_model_load):
    code, err = _harness_dry_run(capsys, tmp_path, tiny_model_dir, tiny_data_dir, "--num-fewshot", "3")
    assert code == 2
    assert _one_error_line(err) == (
        "instructeval: error: --num-fewshot 3 sets K of the nine InstructEval tasks (--tasks), and none is given; "
        "a harness task's n-shot follows its name: --harness-tasks hellaswag:3")
    code, err = _harness_dry_run(capsys, tmp_path, tiny_model_dir, tiny_data_dir, "--selections", "4")
    assert code == 2 and "--selections applies to the nine InstructEval tasks (--tasks) only" in _one_error_line(err)


def test_num_fewshot_with_the_nine_tasks_says_which_harness_tasks_keep_their_nshot(tmp_path, tiny_model_dir, tiny_data_dir,
                                                                                  capsys, no_model_load):
    code, err = _harness_dry_run(capsys, tmp_path, tiny_model_dir, tiny_data_dir, "--num-fewshot", "3", "--tasks", "agnews",
                                 "--settings", "zero_shot")
    assert code == 0, err
    assert ("--num-fewshot 3 sets K of the nine tasks only: hellaswag keep(s) the harness task's own n-shot; "
            "write hellaswag:3 in --harness-tasks to give it 3") in err
    assert "hellaswag (0-shot)" in err
