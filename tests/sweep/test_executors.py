"""Executor options: checked before anything loads, one-line errors; no Ray needed here."""

from __future__ import annotations

import sys

import pytest

from instructeval_tasks.cli import main as cli_main
from instructeval_tasks.sweep.executor_registry import make_executor
from instructeval_tasks.sweep.executors import ExecutorOptionError, parse_worker_resources


def _run(tmp_path, *extra: str) -> list[str]:
    return ["run", "--model", "hf", "--tasks", "agnews", "--output", str(tmp_path / "out"), "--dry-run", *extra]


@pytest.mark.parametrize("extra, message", [
    (("--workers", "2"), "--workers 2 needs --executor ray (the local executor is one process)"),
    (("--ray-address", "auto"), "--ray-address needs --executor ray"),
    (("--executor", "ray", "--workers", "0"), "--workers must be at least 1, got 0"),
])
def test_executor_options_that_do_not_fit_are_one_line_errors(tmp_path, capsys, extra, message):
    assert cli_main(_run(tmp_path, *extra)) == 2
    assert capsys.readouterr().err == f"instructeval: error: {message}\n"
    assert not (tmp_path / "out").exists()


def test_worker_resources_are_json_objects_of_amounts():
    assert parse_worker_resources('{"num_gpus": 1, "num_cpus": 2}') == {"num_gpus": 1, "num_cpus": 2}
    assert parse_worker_resources('{"resources": {"big_node": 1}}') == {"resources": {"big_node": 1}}
    assert parse_worker_resources(None) == {} and parse_worker_resources("") == {}
    with pytest.raises(ExecutorOptionError, match="not JSON"):
        parse_worker_resources("num_gpus=1")
    with pytest.raises(ExecutorOptionError, match="JSON object"):
        parse_worker_resources("[1]")
    with pytest.raises(ExecutorOptionError, match="'num_gpus' must be a number >= 0"):
        parse_worker_resources('{"num_gpus": "one"}')


def test_ray_executor_without_ray_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(ExecutorOptionError, match=r"pip install 'instructeval-harness\[ray\]'"):
        make_executor("ray", workers=2)


def test_a_preloaded_model_runs_only_locally():
    with pytest.raises(ExecutorOptionError, match="only with the local executor"):
        make_executor("ray", lm=object())
