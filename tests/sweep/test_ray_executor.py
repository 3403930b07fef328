"""``--executor ray``: a sweep on Ray workers writes what the single-process sweep writes.

One local Ray instance serves the whole module (starting one takes several seconds); the sweeps
join it (``run_sweep`` reuses an initialised Ray), and the CLI test joins it by its address.
Skipped when Ray is not installed (``pip install 'instructeval-harness[ray]'``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from instructeval_tasks.sweep import run_sweep  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OVERRIDES = {"instructions_per_method": 1, "test_sample": 4}
TASKS = "agnews,nq_open"  # a multiple-choice and a generation task; 4 chunks, 28 variants


@pytest.fixture(scope="module")
def ray_address():
    """One local Ray instance for the module: two CPUs, one per worker."""
    if ray.is_initialized():
        ray.shutdown()
    # On a machine shared with other jobs, Ray's memory monitor (which kills workers when the whole
    # node is nearly full) would kill these tiny workers for the others' memory; the test that
    # kills a worker does it itself.
    os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")
    info = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield info.address_info["gcs_address"]
    ray.shutdown()


def _ours(proc) -> bool:
    try:
        return any(parent.pid == os.getpid() for parent in proc.parents())
    except Exception:  # the process ended meanwhile
        return False


def _kill_first_busy_worker(killed: list[int]) -> None:
    """SIGKILL the first worker seen evaluating chunks; its pid goes to ``killed``."""
    import psutil

    # Ray titles an actor's process "ray::ChunkWorker.evaluate" while it evaluates chunks; only
    # workers of this test's Ray (started by this process) are candidates.
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not killed:
        for proc in psutil.process_iter(["cmdline"]):
            if "ray::ChunkWorker.evaluate" in " ".join(proc.info["cmdline"] or []) and _ours(proc):
                os.kill(proc.pid, signal.SIGKILL)
                killed.append(proc.pid)
                return
        time.sleep(0.01)


def _sweep(out: Path, tiny_model_dir: Path, tiny_data_dir: Path, **options):
    return run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks=TASKS,
                     methods="null,generic", output=out, profile="quick", overrides=OVERRIDES,
                     data_dir=str(tiny_data_dir), device="cpu", progress=False, **options)


@pytest.fixture(scope="module")
def single_process(tmp_path_factory, tiny_model_dir, tiny_data_dir):
    """The reference: the same sweep with the local executor, in this process."""
    out = tmp_path_factory.mktemp("local")
    report = _sweep(out, tiny_model_dir, tiny_data_dir)
    assert report.evaluated == 28
    return out


def test_two_ray_workers_write_the_single_process_files(single_process, ray_address, tmp_path, tiny_model_dir,
                                                        tiny_data_dir, same_sweep, capsys):
    report = _sweep(tmp_path, tiny_model_dir, tiny_data_dir, executor="ray", workers=2)
    assert (report.planned, report.evaluated) == (28, 28)
    assert "ray: 2 worker(s)" in capsys.readouterr().err
    same_sweep(single_process, tmp_path)
    assert ray.is_initialized()  # a Ray it did not start is left running


def test_a_killed_worker_has_its_chunk_retried_and_the_sweep_completes(single_process, ray_address, tmp_path,
                                                                        tiny_model_dir, tiny_data_dir, capsys,
                                                                        same_sweep):
    killed: list[int] = []
    killer = threading.Thread(target=_kill_first_busy_worker, args=(killed,), daemon=True)
    killer.start()
    report = _sweep(tmp_path, tiny_model_dir, tiny_data_dir, executor="ray", workers=2, echo=print)
    killer.join(timeout=5)
    assert killed, "no worker was seen evaluating a chunk"
    captured = capsys.readouterr()
    assert "ray: a worker died while evaluating" in captured.err
    assert report.evaluated == 28
    same_sweep(single_process, tmp_path)


def test_cli_ctrl_c_saves_the_chunks_in_progress_and_the_rerun_resumes(single_process, ray_address, tmp_path,
                                                                        tiny_model_dir, tiny_data_dir, same_sweep):
    # Ctrl-C as the first chunk is saved: the two workers' chunks in progress are saved too. On a
    # loaded machine the signal can land after the last of the 4 chunks was handed out (then all 4
    # are saved and nothing is left to resume): such a try is repeated in a fresh folder.
    for attempt in range(3):
        out = tmp_path / f"out{attempt}"
        args = [sys.executable, "-m", "instructeval_tasks.cli", "run", "--model", "hf",
                "--model_args", f"pretrained={tiny_model_dir},dtype=float32", "--tasks", TASKS,
                "--methods", "null,generic", "--profile", "quick", "--instructions-per-method", "1",
                "--test-sample", "4", "--data-dir", str(tiny_data_dir), "--output", str(out), "--device", "cpu",
                "--executor", "ray", "--workers", "2", "--ray-address", ray_address]
        log = tmp_path / f"first{attempt}.log"
        with log.open("w") as sink:
            proc = subprocess.Popen(args, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and proc.poll() is None:
                if list(out.rglob("results_*.json")):
                    proc.send_signal(signal.SIGINT)
                    break
                time.sleep(0.02)
            code = proc.wait(timeout=300)
        output = log.read_text()
        partial = len(list(out.rglob("results_*.json")))
        if partial == 4 and code in (0, 130):  # the stop came too late to leave anything to resume
            continue
        assert code == 130, output[-3000:]
        assert "Run the same command again to resume" in output
        break
    assert 0 < partial < 4, f"the stop landed after the last chunk in {attempt + 1} tries"

    with (tmp_path / "second.log").open("w") as sink:
        code = subprocess.run(args, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT, timeout=600).returncode
    output = (tmp_path / "second.log").read_text()
    assert code == 0, output[-3000:]
    assert "0 evaluated" not in output and "skipped (done)" in output
    same_sweep(single_process, out)


def test_a_worker_that_cannot_load_the_model_stops_the_sweep(ray_address, tmp_path, tiny_data_dir, files_of):
    from instructeval_tasks.sweep.ray_executor import WorkerFailure

    (tmp_path / "no-model").mkdir()  # a folder without a model: only the worker finds out
    with pytest.raises(WorkerFailure, match="could not load the model"):
        run_sweep(model="hf", model_args=f"pretrained={tmp_path / 'no-model'}", tasks="agnews", methods="null",
                  output=tmp_path / "out", overrides={"test_sample": 2, "settings": ["zero_shot"]},
                  data_dir=str(tiny_data_dir), device="cpu", progress=False, executor="ray", workers=1)
    assert set(files_of(tmp_path / "out")) == {"no-model/sweep.json"}


def test_an_unreachable_ray_address_is_one_line_before_anything_runs(tmp_path, tiny_data_dir, capsys):
    """It used to print ~20 lines of Ray's connection warnings (minutes of retries) before the error."""
    import socket

    from instructeval_tasks import cli

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for extra in ([], ["--dry-run"]):
        code = cli.main(["run", "--model", "hf", "--model_args", "pretrained=unused", "--tasks", "agnews",
                         "--data-dir", str(tiny_data_dir), "--output", str(tmp_path / "out"), "--executor", "ray",
                         "--workers", "1", "--ray-address", f"127.0.0.1:{port}", *extra])
        err = capsys.readouterr().err
        assert code == 2 and err == (f"instructeval: error: --ray-address 127.0.0.1:{port}: nothing answers at "
                                     f"127.0.0.1:{port} within 5 s (Connection refused); start the cluster there "
                                     f"(ray start --head) or fix the address\n"), err
    assert not (tmp_path / "out").exists()


def test_harness_tasks_run_on_ray_workers_as_they_run_locally(ray_address, tmp_path, tiny_model_dir, tiny_data_dir):
    """A harness task is one job (one harness call) for a worker; the files match the local run's."""
    import json

    def results(out: Path) -> dict[str, dict]:
        found = {}
        for path in sorted(out.rglob("results_*.json")):
            found.update(json.loads(path.read_text())["results"])
        return found

    common = dict(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews", methods="null,generic",
                  profile="quick", overrides=OVERRIDES, data_dir=str(tiny_data_dir), device="cpu", progress=False,
                  harness_tasks="hellaswag:1")
    local = run_sweep(**common, output=tmp_path / "local")
    remote = run_sweep(**common, output=tmp_path / "ray", executor="ray", workers=2)
    # agnews's variants (null and one generic instruction, 7 settings each), then hellaswag's null and generic
    assert local.evaluated == remote.evaluated == 14 + 2
    ours, theirs = results(tmp_path / "ray"), results(tmp_path / "local")
    assert set(ours) == set(theirs) and "hellaswag__null" in ours
    for name in theirs:
        assert {k: v for k, v in ours[name].items() if "stderr" not in k} == \
               {k: v for k, v in theirs[name].items() if "stderr" not in k}, name


def test_budgeted_chunks_are_pooled_on_a_ray_worker_and_saved_as_locally(ray_address, tmp_path, tiny_model_dir,
                                                                         tiny_data_dir, same_sweep, capsys):
    """A worker evaluates consecutive budgeted chunks in one harness call, as the local executor does:
    one worker makes the local run's pool and writes its bytes; two workers share the chunks out."""
    import json

    from instructeval_tasks.sweep.budget import Budget

    common = dict(model="instructeval-hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews",
                  methods="null,generic", profile="quick", data_dir=str(tiny_data_dir), device="cpu", progress=False,
                  budget=Budget(0.25, min_items=2),
                  overrides={"instructions_per_method": 5, "test_sample": 8, "settings": ["zero_shot"]})

    def pools(out: Path) -> list[int]:
        return sorted(json.loads(p.read_text())["config"]["instructeval_hf"].get("pooled_variants", 1)
                      for p in out.rglob("results_*.json"))

    assert run_sweep(output=tmp_path / "local", **common).evaluated == 6
    assert run_sweep(output=tmp_path / "one", executor="ray", workers=1, **common).evaluated == 6
    same_sweep(tmp_path / "local", tmp_path / "one")
    assert pools(tmp_path / "one") == [6] * 6  # one call for the six chunks
    assert run_sweep(output=tmp_path / "two", executor="ray", workers=2, **common).evaluated == 6
    assert pools(tmp_path / "two") == [3] * 6  # each worker a pool of three

    killed: list[int] = []  # the worker dies during its pool: the six chunks go to a fresh worker
    killer = threading.Thread(target=_kill_first_busy_worker, args=(killed,), daemon=True)
    killer.start()
    assert run_sweep(output=tmp_path / "killed", executor="ray", workers=1, echo=print, **common).evaluated == 6
    killer.join(timeout=5)
    assert killed and "ray: a worker died while evaluating 6 pooled chunks from" in capsys.readouterr().err
    same_sweep(tmp_path / "local", tmp_path / "killed")


def test_adaptive_rounds_on_ray_workers_choose_the_local_run_s_cells(ray_address, tmp_path, tiny_model_dir, tiny_data_dir,
                                                                    files_of, budget_cells_of, capsys):
    """Each round is chosen in the sweep's process from the saved cells and evaluated on the same
    workers (started once for the whole sweep, so each loads the model once)."""
    from instructeval_tasks.sweep.budget import Budget

    common = dict(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews",
                  methods="null,generic", profile="quick", data_dir=str(tiny_data_dir), device="cpu", progress=False,
                  budget=Budget(0.5, min_items=1, design="adaptive"),
                  overrides={"instructions_per_method": 4, "test_sample": 8, "settings": ["zero_shot"]})

    local = run_sweep(output=tmp_path / "local", **common)
    capsys.readouterr()
    lines: list[str] = []
    on_ray = run_sweep(output=tmp_path / "ray", executor="ray", workers=2, echo=lines.append, **common)
    assert on_ray.evaluated == local.evaluated and any("__r2" in name for name in budget_cells_of(tmp_path / "ray"))
    assert budget_cells_of(tmp_path / "ray") == budget_cells_of(tmp_path / "local")
    assert sorted(files_of(tmp_path / "ray")) == sorted(files_of(tmp_path / "local"))
    assert capsys.readouterr().err.count("ray: 2 worker(s) on") == 1  # the progress lines go to stderr
    assert sum(line.startswith("adaptive round") for line in lines) == 2


def test_chat_placements_run_on_ray_workers_as_they_run_locally(ray_address, tmp_path, tiny_chat_model, tiny_data_dir,
                                                                same_sweep):
    common = dict(model="hf", model_args=f"pretrained={tiny_chat_model},dtype=float32", tasks="agnews",
                  methods="null,generic", profile="quick", data_dir=str(tiny_data_dir), device="cpu", progress=False,
                  placements=("chat-system",), overrides={"instructions_per_method": 1, "test_sample": 4,
                                                           "settings": ["zero_shot"]})
    assert run_sweep(output=tmp_path / "local", **common).evaluated == 2
    assert run_sweep(output=tmp_path / "ray", executor="ray", workers=1, **common).evaluated == 2
    same_sweep(tmp_path / "local", tmp_path / "ray")
