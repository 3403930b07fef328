"""``instructeval banks list|show|validate``."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from instructeval_tasks.cli import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["banks", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_list_shipped(capsys):
    code, out, _ = run(capsys, "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split() == ["method", "agnews", "anli", "boolq", "imdb", "emotion", "cosmosqa", "hellaswag", "nq_open", "triviaqa"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert rows["null"] == ["1"] * 9 and rows["generic"] == ["5"] * 9 and rows["adhoc"] == ["40"] * 9
    assert rows["structured"] == ["1"] * 9
    assert rows["promptsource"] == ["5", "15", "9", "10", "5", "6", "8", "3", "3"]


def test_list_original_layout(capsys, upstream_dir):
    code, out, _ = run(capsys, "list", "--bank-dir", str(upstream_dir))
    assert code == 0
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[2:] if not line.startswith("(")}
    assert rows["low_perplexity"] == ["5x13"] * 9
    assert rows["rlprompt"] == ["5"] * 7 + ["-", "-"]
    assert "NxM" in out


def test_show(capsys):
    code, out, _ = run(capsys, "show", "promptsource", "agnews")
    assert code == 0
    assert out.splitlines()[0] == "promptsource-agnews-24e44a81: What label best describes this news article?"
    code, out, _ = run(capsys, "show", "structured", "imdb", "--encoding", "prompt")
    assert out == "structured-imdb-0:\nPrompt: Decide whether the movie review is Positive or Negative.\n\n"


def test_show_original_layout(capsys, upstream_dir):
    code, out, _ = run(capsys, "show", "ape", "triviaqa", "--bank-dir", str(upstream_dir))
    assert code == 0 and 'orig-ape-triviaqa-2: " use Google to find the answer to the question."' in out
    code, out, _ = run(capsys, "show", "low_perplexity", "agnews", "--bank-dir", str(upstream_dir), "--model", "opt1b3")
    assert len(out.splitlines()) == 5 and "(model opt1b3)" in out
    code, out, _ = run(capsys, "show", "low_perplexity", "agnews", "--bank-dir", str(upstream_dir))
    assert len(out.splitlines()) == 65


def test_show_unknown_method(capsys):
    code, _, err = run(capsys, "show", "ape", "agnews")  # a user error: one line, exit 2
    assert code == 2 and "no method 'ape'" in err and err.startswith("instructeval: error: ")


def test_validate_shipped_and_upstream(capsys, upstream_dir):
    code, out, _ = run(capsys, "validate")
    assert code == 0 and out.startswith("ok ")
    code, out, _ = run(capsys, "validate", str(upstream_dir))
    assert code == 0
    assert "7 methods, 9 tasks, 169 (method, task, model) banks, 809 entries" in out


def test_validate_console_script(upstream_dir):
    exe = shutil.which("instructeval")
    if exe is None:
        pytest.skip("instructeval console script not installed")
    proc = subprocess.run([exe, "banks", "validate", str(upstream_dir)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_validate_lists_every_error(capsys, tmp_path):
    broken = tmp_path / "broken"
    (broken / "manual").mkdir(parents=True)
    (broken / "manual" / "ag_news.yaml").write_text('- "Fine."\n- 7\n- ""\n')
    (broken / "native.yaml").write_text(
        "method: custom\ntasks: [agnews, unknown_task]\nprovenance: {source: x}\nentries:\n  - {id: a, text: Hi}\n"
    )
    (broken / "dups.yaml").write_text(
        "method: other\ntasks: [imdb]\nprovenance: {source: x}\nentries:\n  - {id: a, text: Hi}\n  - {id: a, text: Ho}\n"
        "  - id: s\n    structured: {prompt: P, definition: D}\n"
    )
    (broken / "latin1.yaml").write_bytes(b"method: caf\xe9\n")
    from instructeval_banks import BANKS_DIR

    code, out, _ = run(capsys, "validate", str(BANKS_DIR), str(broken))
    assert code == 1
    assert out.splitlines()[0].startswith("ok ")
    assert f"FAIL {broken}: 6 problem(s)" in out
    for fragment in (
        "ag_news.yaml: item 1: expected a string, got int",
        "ag_news.yaml: item 2: empty instruction for method 'promptsource'",
        "native.yaml: unknown task 'unknown_task'",
        "dups.yaml: entry 1 (id 'a'): duplicate id",
        "dups.yaml: entry 2 (id 's'): structured: missing required key 'positive_examples'",
        "latin1.yaml: not UTF-8",
    ):
        assert fragment in out, (fragment, out)


def test_validate_missing_directory(capsys, tmp_path):
    code, _, err = run(capsys, "validate", str(tmp_path / "nope"))  # a typo'd path: a user error, exit 2
    assert code == 2 and "does not exist" in err and err.startswith("instructeval: error: ")


def test_banks_without_action_prints_help(capsys):
    code, out, _ = run(capsys)
    assert code == 2 and "validate" in out
