"""Every user error of ``instructeval`` (all commands but ``run``) is one stderr line and exit code 2.

Table-driven: each case runs the real console script as a subprocess and asserts that stderr is
exactly one line starting ``instructeval: error:``, holding the expected words, with exit code 2
and no traceback. The cases run a few at a time (most fail before any heavy import).
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from instructeval_aggregation.testing import SyntheticVariant, write_run

PREFIX = "instructeval: error: "


def _instructeval() -> list[str]:
    exe = Path(sys.executable).with_name("instructeval")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "instructeval_tasks.cli"]


def cases(tmp: Path, data: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (arguments, a phrase the one-line message must contain)."""
    a_file = tmp / "a_file.txt"
    runs = tmp / "runs"
    missing = str(tmp / "missing")
    induce = ["induce", "--method", "ape", "--model", "hf", "--model_args", "pretrained=/nonexistent"]
    return {
        # the top level and argparse-level errors (one line too)
        "unknown command": (["nosuch"], "invalid choice"),
        "tasks-dir extra argument": (["tasks-dir", "extra"], "unrecognized arguments: extra"),
        # prompt
        "prompt unknown task": (["prompt", "agnwes"], "unknown InstructEval task 'agnwes' (did you mean 'agnews'?)"),
        "prompt metadata not JSON": (["prompt", "agnews", "--metadata", "{bad"], "--metadata is not valid JSON"),
        "prompt metadata unterminated string": (["prompt", "agnews", "--metadata", '{"method": "gen'],
                                                "(Unterminated string starting at column 12)"),
        "prompt metadata not an object": (["prompt", "agnews", "--metadata", "[1]"], "--metadata must be a JSON object"),
        "prompt negative k": (["prompt", "agnews", "-k", "-1"], "--num-fewshot -1: must be >= 0"),
        "prompt doc not a number": (["prompt", "agnews", "--doc", "x"], "--doc: invalid int value"),
        "prompt missing data dir": (["prompt", "agnews", "--data-dir", missing], "does not exist"),
        "prompt unknown method": (
            ["prompt", "agnews", "--data-dir", str(data), "--metadata", '{"method": "genric"}'],
            "no method 'genric' for task 'agnews' (did you mean 'generic'?)",
        ),
        "prompt doc out of range": (["prompt", "agnews", "--data-dir", str(data), "--doc", "99999"], "--doc 99999: the eval split"),
        # banks
        "banks unknown method": (["banks", "show", "genric", "agnews"], "(did you mean 'generic'?)"),
        "banks unknown task": (["banks", "show", "generic", "agnwes"], "no task 'agnwes' (did you mean 'agnews'?)"),
        "banks missing bank dir": (["banks", "list", "--bank-dir", missing], "does not exist"),
        "banks validate missing dir": (["banks", "validate", missing], "does not exist"),
        "banks unknown encoding": (["banks", "show", "structured", "agnews", "--encoding", "nosuch"], "--encoding 'nosuch'"),
        # induce (all refused before the model loads: its pretrained= does not exist)
        "induce unknown task": (induce + ["--tasks", "agnwes", "--output", str(tmp / "induced")], "unknown task(s) ['agnwes']"),
        "induce file-typed output": (induce + ["--tasks", "agnews", "--output", str(a_file)], "is a file, not a folder"),
        "induce bad knob": (induce + ["--tasks", "agnews", "--output", str(tmp / "induced"), "--demos", "0"], "must be >= 1"),
        "induce unknown method": (["induce", "--method", "nosuch", "--model", "hf", "--tasks", "agnews", "--output", "x"], "invalid choice"),
        # prepare-model (refused before installing or converting anything)
        "prepare-model unknown model": (["prepare-model", "nosuch", "--out", str(tmp / "m")], "invalid choice"),
        "prepare-model file-typed out": (["prepare-model", "smollm2-135m-instruct", "--out", str(a_file)], "is a file, not a folder"),
        "prepare-model out under a file": (["prepare-model", "smollm2-135m-instruct", "--out", str(a_file / "m")], "is a file, not a folder"),
        # aggregate
        "aggregate missing input": (["aggregate", missing, "--out", str(tmp / "report")], f"input path {missing} does not exist"),
        "aggregate file-typed out": (["aggregate", str(runs), "--out", str(a_file)], "is a file, not a folder"),
        "aggregate out holds other files": (["aggregate", str(runs), "--out", str(runs)], "not part of a report"),
        "aggregate alias with two '='": (["aggregate", str(runs), "--out", str(tmp / "report"), "--model-alias", "a=b=c"],
                                         "--model-alias 'a=b=c': expected NAME=LABEL (one '=', neither side empty)"),
        "aggregate alias given twice": (["aggregate", str(runs), "--out", str(tmp / "report"), "--model-alias", "a=b",
                                         "--model-alias", "a=c"], "--model-alias 'a=c': a is already an alias of b"),
        "aggregate bad bootstrap": (["aggregate", str(runs), "--out", str(tmp / "report"), "--bootstrap", "5"], "--bootstrap"),
        "aggregate bad ci level": (["aggregate", str(runs), "--out", str(tmp / "report"), "--ci-level", "2"], "--ci-level"),
        "aggregate bad metric": (["aggregate", str(runs), "--out", str(tmp / "report"), "--metric", "f1"], "invalid choice"),
        "aggregate missing registry": (
            ["aggregate", str(runs), "--out", str(tmp / "report"), "--model-registry", missing, "--bootstrap", "0", "--no-plots"],
            f"model registry {missing}: cannot read",
        ),
    }


def run_case(args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(_instructeval() + args, capture_output=True, text=True, env=env, timeout=300)


def test_user_errors_are_one_line_and_exit_2(tmp_path, tiny_data_dir):
    (tmp_path / "a_file.txt").write_text("not a folder")
    write_run(tmp_path / "runs", "SmolLM2-135M", [SyntheticVariant("agnews", "null", "null", correct=[1, 0, 1])])
    table = cases(tmp_path, tiny_data_dir)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(table, pool.map(run_case, [args for args, _ in table.values()])))
    failures = []
    for name, (args, phrase) in table.items():
        proc = results[name]
        lines = proc.stderr.strip().splitlines()
        ok = (
            proc.returncode == 2
            and len(lines) == 1
            and lines[0].startswith(PREFIX)
            and phrase in lines[0]
            and "Traceback" not in proc.stderr + proc.stdout
        )
        if not ok:
            failures.append(f"{name}: exit {proc.returncode}, stderr:\n{proc.stderr[-1500:]}")
    assert not failures, "\n\n".join(failures)
    assert not (tmp_path / "induced").exists() and not (tmp_path / "m").exists()  # nothing written


def test_debug_shows_the_traceback():
    proc = run_case(["--debug", "prompt", "agnwes"])
    assert proc.returncode != 0 and "Traceback" in proc.stderr and "UnknownTaskError" in proc.stderr


def test_unknown_task_error_is_still_a_key_error():
    from instructeval_tasks.errors import UserError
    from instructeval_tasks.specs import get_spec

    with pytest.raises(KeyError) as err:
        get_spec("hellswag")
    assert isinstance(err.value, UserError)
    assert str(err.value).startswith("unknown InstructEval task 'hellswag' (did you mean 'hellaswag'?)")
    assert get_spec("instructeval_agnews").name == "agnews"
