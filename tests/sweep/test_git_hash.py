"""A sweep run outside a git checkout keeps git's messages off the terminal (lm-eval asks ``git
describe`` on every harness call) and records the harness's ``git_hash`` all the same."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from instructeval_tasks import cli


def test_a_sweep_outside_a_git_checkout_prints_no_git_error(tmp_path, tiny_model_dir, tiny_data_dir, monkeypatch, capfd):
    """lm-eval asks ``git describe`` in the working directory on every harness call; outside a
    checkout git said ``fatal: not a git repository`` once per variant and harness task."""
    away = tmp_path / "not_a_checkout"
    away.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # git looks no further up than here
    monkeypatch.chdir(away)
    code = cli.main(["run", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32",
                     "--tasks", "agnews", "--harness-tasks", "hellaswag", "--methods", "null", "--settings", "zero_shot",
                     "--instructions-per-method", "1", "--test-sample", "2", "--data-dir", str(tiny_data_dir),
                     "--output", str(tmp_path / "out"), "--device", "cpu"])
    err = capfd.readouterr().err
    assert code == 0, err
    assert "not a git repository" not in err and "fatal:" not in err
    files = list((tmp_path / "out").rglob("results_*.json"))
    assert len(files) == 2 and all("git_hash" in json.loads(p.read_text()) for p in files)
    assert all(json.loads(p.read_text())["git_hash"] is None for p in files)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_git_hash_is_the_harness_s_inside_a_checkout(tmp_path, monkeypatch, capfd):
    import lm_eval.evaluator as evaluator

    from instructeval_tasks.sweep.env_info import environment_info_once

    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    expected = subprocess.check_output(["git", "describe", "--always"]).decode().strip()
    capfd.readouterr()
    original = evaluator.get_git_commit_hash
    assert original() == expected  # the harness's own record
    with environment_info_once():
        assert evaluator.get_git_commit_hash() == expected
    assert evaluator.get_git_commit_hash is original
