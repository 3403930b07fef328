"""One writer per sweep folder: two real ``instructeval run`` processes on one --output."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from instructeval_tasks.sweep.lock import RUN_LOCK, OutputLocked, RunLock, describe_holder

REPO = Path(__file__).resolve().parents[2]


def _args(model_dir: Path, data_dir: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "instructeval_tasks.cli", "run", "--model", "hf",
            "--model_args", f"pretrained={model_dir},dtype=float32", "--tasks", "agnews,boolq,emotion,imdb",
            "--methods", "null,generic", "--instructions-per-method", "2", "--test-sample", "4",
            "--data-dir", str(data_dir), "--output", str(out), "--device", "cpu", *extra]


def _start(args: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.Popen(args, cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


def test_second_run_on_one_label_refuses_or_waits(tmp_path, tiny_model_dir, tiny_data_dir):
    out = tmp_path / "out"
    folder = out / tiny_model_dir.name
    owner = folder / (RUN_LOCK + ".owner")
    first = _start(_args(tiny_model_dir, tiny_data_dir, out), tmp_path / "first.log")
    procs = [first]
    try:
        deadline = time.monotonic() + 240
        while not owner.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert owner.exists(), (tmp_path / "first.log").read_text()[-2000:]
        # The first run is paused while it holds the lock, so that it cannot finish before the
        # contenders ask for the lock however fast it runs (a paused process keeps its locks).
        os.kill(first.pid, signal.SIGSTOP)
        refused = _start(_args(tiny_model_dir, tiny_data_dir, out), tmp_path / "refused.log")
        waiting = _start(_args(tiny_model_dir, tiny_data_dir, out, "--wait-lock"), tmp_path / "waiting.log")
        procs += [refused, waiting]
        try:
            code = refused.wait(timeout=240)
            still_running = first.poll() is None
            until = time.monotonic() + 180  # the waiting contender reaches the lock and says it waits
            while "waiting for" not in (tmp_path / "waiting.log").read_text() and waiting.poll() is None \
                    and time.monotonic() < until:
                time.sleep(0.1)
        finally:
            os.kill(first.pid, signal.SIGCONT)
        refused_log = (tmp_path / "refused.log").read_text()
        assert code == 2, refused_log[-3000:]
        errors = [line for line in refused_log.splitlines() if line.startswith("instructeval: error:")]
        assert len(errors) == 1 and "Traceback" not in refused_log, refused_log[-3000:]
        assert str(folder / RUN_LOCK) in errors[0]
        assert f"pid {first.pid} on host {socket.gethostname()}" in errors[0]
        assert "--wait-lock" in errors[0]
        assert still_running, "the first run ended before the second one asked for the lock; the test proved nothing"

        assert first.wait(timeout=600) == 0, (tmp_path / "first.log").read_text()[-3000:]
        assert waiting.wait(timeout=300) == 0, (tmp_path / "waiting.log").read_text()[-3000:]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    waiting_log = (tmp_path / "waiting.log").read_text()
    total = 4 * 3 * 7  # tasks x instructions x variants
    assert f"waiting for {folder / RUN_LOCK}" in waiting_log
    assert f"{total} planned, {total} skipped (done), 0 evaluated" in waiting_log
    # One results entry and one samples file per variant: nothing was written twice.
    names = [name for path in folder.glob("results_*.json") for name in json.loads(path.read_text())["results"]]
    assert len(names) == len(set(names)) == total
    assert len(list(folder.glob("samples_*.jsonl"))) == total
    assert not (folder / (RUN_LOCK + ".owner")).exists()  # removed on release


def test_lock_is_free_again_after_release_and_names_no_holder_when_unknown(tmp_path):
    with RunLock(tmp_path) as lock:
        assert json.loads(lock.owner_path.read_text())["pid"] == os.getpid()
    assert describe_holder(tmp_path / RUN_LOCK) == "holder unknown"
    with RunLock(tmp_path):  # acquirable again
        pass


def test_a_held_lock_refuses_in_process_too(tmp_path):
    """A second lock object (another open file description) on the same file is refused at once."""
    with RunLock(tmp_path):
        with pytest.raises(OutputLocked, match=r"being written by another instructeval run .*pid \d+ on host"):
            RunLock(tmp_path).acquire()
