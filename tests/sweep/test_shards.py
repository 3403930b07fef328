"""``--shard I/N``: disjoint parts of one sweep, written by processes running at once into one output."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from instructeval_banks import load_bank
from instructeval_tasks.cli import main as cli_main
from instructeval_tasks.sweep import build_plan, get_profile, run_sweep
from instructeval_tasks.sweep.chunk import chunk_jobs
from instructeval_tasks.sweep.shards import CLAIMS_DIR, ClaimingQueue, ShardOptionError, ShardSpec

REPO = Path(__file__).resolve().parents[2]
TASKS = "agnews,nq_open"  # 4 chunks (null + 1 generic instruction per task), 28 variants


def test_shard_values_are_checked():
    assert ShardSpec.parse("0/1") == ShardSpec(0, 1) and str(ShardSpec.parse(" 3 / 4 ")) == "3/4"
    for bad, message in (("2", "write I/N"), ("-1/2", "0..1"), ("1/0", "at least 1"), ("2/2", "0..1")):
        with pytest.raises(ShardOptionError, match=message):
            ShardSpec.parse(bad)


def test_cli_shard_error_is_one_line(capsys, tmp_path):
    code = cli_main(["run", "--model", "hf", "--tasks", "agnews", "--output", str(tmp_path), "--shard", "4/4",
                     "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and err == "instructeval: error: --shard 4/4: the index must be 0..3 (shards are numbered from 0)\n"
    # a value that starts with '-' is the option's value, not another option (argparse said "expected one argument")
    code = cli_main(["run", "--model", "hf", "--tasks", "agnews", "--output", str(tmp_path), "--shard", "-1/2", "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and err == "instructeval: error: --shard -1/2: the index must be 0..1 (shards are numbered from 0)\n"


def test_shards_deal_chunks_round_robin_and_cover_the_plan_once():
    plan = build_plan(["agnews", "nq_open", "boolq"], ["null", "generic"], get_profile("quick"), load_bank())
    chunks = list(dict.fromkeys(v.chunk for v in plan))
    assert len(chunks) == 9
    parts = [ShardSpec(i, 4).select(plan) for i in range(4)]
    for i, part in enumerate(parts):
        assert list(dict.fromkeys(v.chunk for v in part)) == chunks[i::4]
        assert part == [v for v in plan if v.chunk in chunks[i::4]]  # whole chunks, plan order
    assert sorted(v.name for part in parts for v in part) == sorted(v.name for v in plan)
    assert ShardSpec(0, 1).select(plan) == plan


def _jobs():
    profile = get_profile("quick").override(instructions_per_method=1)
    plan = build_plan(["agnews"], ["null", "generic"], profile, load_bank())
    return chunk_jobs(plan)


class OtherProcess:
    """Holds a chunk's claim from another thread (a lock's owner thread must also release it)."""

    def __init__(self, root: Path, job, then=lambda: None, hold_seconds: float = 0.3) -> None:
        (root / CLAIMS_DIR).mkdir(exist_ok=True)
        self.lock = FileLock(str(root / CLAIMS_DIR / f"{job.variants[0].chunk}.lock"))
        self.held = threading.Event()
        self.thread = threading.Thread(target=self._hold, args=(then, hold_seconds))
        self.thread.start()
        assert self.held.wait(10)

    def _hold(self, then, hold_seconds: float) -> None:
        with self.lock:
            self.held.set()
            time.sleep(hold_seconds)
            then()


def test_a_chunk_claimed_elsewhere_is_taken_last_and_skipped_once_saved(tmp_path):
    first, second = _jobs()
    saved: set[str] = set()
    lines: list[str] = []
    queue = ClaimingQueue([first, second], tmp_path, still_pending=lambda job: None if job.key in saved else job,
                          echo=lines.append)
    other = OtherProcess(tmp_path, first, then=lambda: saved.add(first.key), hold_seconds=1.0)

    assert queue.take() is second  # the first chunk is being evaluated elsewhere
    queue.release(second)
    assert queue.take() is None  # waited for the claim, found the chunk saved
    assert queue.skipped == len(first.variants)
    assert lines == [f"waiting for chunk {first.variants[0].chunk}: another process is evaluating it"]
    other.thread.join()


def test_a_chunk_whose_claimant_died_is_evaluated_here(tmp_path):
    first, _ = _jobs()
    queue = ClaimingQueue([first], tmp_path, still_pending=lambda job: job)
    other = OtherProcess(tmp_path, first)  # releases without saving: its holder died
    assert queue.take() is first and queue.skipped == 0
    other.thread.join()
    rival = FileLock(str(tmp_path / CLAIMS_DIR / f"{first.variants[0].chunk}.lock"))
    with pytest.raises(Timeout):  # the queue holds the claim until the chunk is released
        rival.acquire(timeout=0)
    queue.release(first)
    rival.acquire(timeout=0)
    rival.release()


def _two_shards_at_once(command: list[str], logs_in: Path) -> list[str]:
    """``command --shard 0/2`` and ``--shard 1/2`` started together; both must exit 0. Their outputs."""
    logs = [logs_in / f"shard{i}.log" for i in range(2)]
    sinks = [log.open("w") for log in logs]
    procs = [subprocess.Popen(command + ["--shard", f"{i}/2"], cwd=REPO, stdout=sink, stderr=subprocess.STDOUT)
             for i, sink in enumerate(sinks)]
    codes = [proc.wait(timeout=600) for proc in procs]
    for sink in sinks:
        sink.close()
    outputs = [log.read_text() for log in logs]
    assert codes == [0, 0], "\n".join(o[-2000:] for o in outputs)
    return outputs


@pytest.fixture(scope="module")
def single_process(tmp_path_factory, tiny_model_dir, tiny_data_dir):
    out = tmp_path_factory.mktemp("one")
    report = run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks=TASKS,
                       methods="null,generic", output=out, profile="quick",
                       overrides={"instructions_per_method": 1, "test_sample": 4}, data_dir=str(tiny_data_dir),
                       device="cpu", progress=False)
    assert report.evaluated == 28
    return out


def test_two_shards_at_once_write_the_single_run(single_process, tmp_path, tiny_model_dir, tiny_data_dir, same_sweep):
    out = tmp_path / "out"
    base = [sys.executable, "-m", "instructeval_tasks.cli", "run", "--model", "hf",
            "--model_args", f"pretrained={tiny_model_dir},dtype=float32", "--tasks", TASKS,
            "--methods", "null,generic", "--profile", "quick", "--instructions-per-method", "1",
            "--test-sample", "4", "--data-dir", str(tiny_data_dir), "--output", str(out), "--device", "cpu"]
    outputs = _two_shards_at_once(base, tmp_path)
    for i, output in enumerate(outputs):
        assert f"shard {i}/2 of the sweep: 14 of 28 variants planned" in output
        assert "14 planned, 0 skipped (done), 14 evaluated" in output
    same_sweep(single_process, out)  # the union, byte for byte but times; one file per variant and chunk

    # The union is one complete sweep to the aggregation and to a re-run.
    report = run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks=TASKS,
                       methods="null,generic", output=out, profile="quick",
                       overrides={"instructions_per_method": 1, "test_sample": 4}, data_dir=str(tiny_data_dir),
                       device="cpu", progress=False, dry_run=True)
    assert (report.planned, report.skipped) == (28, 28)


def test_aggregate_reads_the_union_of_the_shards(single_process, tmp_path, tiny_model_dir, tiny_data_dir):
    out = tmp_path / "out"
    common = dict(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks=TASKS,
                  methods="null,generic", output=out, profile="quick",
                  overrides={"instructions_per_method": 1, "test_sample": 4}, data_dir=str(tiny_data_dir),
                  device="cpu", progress=False)
    for i in range(3):
        run_sweep(**common, shard=f"{i}/3")
    tables = {}
    for name, folder in (("one", single_process), ("shards", out)):
        report = tmp_path / f"report_{name}"
        assert cli_main(["aggregate", str(folder), "--out", str(report), "--no-plots", "--bootstrap", "50"]) == 0
        tables[name] = {p.relative_to(report).as_posix(): _without_paths(p) for p in sorted(report.rglob("*.csv"))}
    assert len(tables["one"]) > 3 and tables["shards"] == tables["one"]


def _without_paths(csv_path: Path) -> list[dict]:
    """A report table's rows, less the columns naming input files (their folders differ here)."""
    import csv

    with csv_path.open(newline="", encoding="utf-8") as handle:
        return [{k: v for k, v in row.items() if k not in ("file", "samples")} for row in csv.DictReader(handle)]


def test_the_same_shard_started_twice_is_refused(tmp_path, tiny_model_dir, tiny_data_dir):
    from instructeval_tasks.sweep.lock import OutputLocked, RunLock, shard_lock_name

    common = dict(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks=TASKS,
                  methods="null", output=tmp_path, overrides={"test_sample": 2, "settings": ["zero_shot"]},
                  data_dir=str(tiny_data_dir), device="cpu", progress=False)
    label_dir = tmp_path / tiny_model_dir.name
    with RunLock(label_dir, name=shard_lock_name(0, 2)):  # shard 0/2 is running elsewhere
        with pytest.raises(OutputLocked, match=r"\.instructeval\.shard-0-of-2\.lock"):
            run_sweep(**common, shard="0/2")
        report = run_sweep(**common, shard="1/2")  # another shard of the same sweep runs beside it
    assert (report.planned, report.evaluated) == (1, 1)


ADAPTIVE = ["--tasks", "agnews", "--methods", "null,generic", "--profile", "quick", "--instructions-per-method", "4",
            "--test-sample", "8", "--settings", "zero_shot", "--budget", "0.5", "--budget-min-items", "1",
            "--budget-design", "adaptive"]


@pytest.fixture(scope="module")
def adaptive_single(tmp_path_factory, tiny_model_dir, tiny_data_dir, budget_cells_of):
    out = tmp_path_factory.mktemp("adaptive_one")
    assert cli_main(["run", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32", *ADAPTIVE,
                     "--data-dir", str(tiny_data_dir), "--output", str(out), "--device", "cpu"]) == 0
    cells = budget_cells_of(out)
    assert any("__r1" in name for name in cells) and any("__r2" in name for name in cells)
    return out, cells


def test_shards_run_in_turn_choose_the_adaptive_rounds_of_the_single_run(adaptive_single, tmp_path, tiny_model_dir,
                                                                         tiny_data_dir, capsys, budget_cells_of):
    """A shard run alone evaluates the other shards' first slice (none holds it), then every round;
    a shard run after it finds its part done."""
    out = tmp_path / "out"
    base = ["run", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32", *ADAPTIVE,
            "--data-dir", str(tiny_data_dir), "--output", str(out), "--device", "cpu"]
    assert cli_main(base + ["--shard", "0/2"]) == 0
    err = capsys.readouterr().err
    assert "shard 0/2 of the sweep: 3 of 5 variants planned" in err
    assert ("shard 0/2: the rounds are chosen from every shard's cells; 2 variant(s) of the other shards not saved "
            "yet, evaluated here unless another shard is evaluating them (then waited for)") in err
    assert "adaptive round 2 of 2:" in err
    assert budget_cells_of(out) == adaptive_single[1]
    assert cli_main(base + ["--shard", "1/2"]) == 0
    err = capsys.readouterr().err
    assert "2 of 5 variants planned, 2 already done, 0 to run" in err and "other shards not saved" not in err
    assert budget_cells_of(out) == adaptive_single[1]


def test_two_shards_at_once_choose_the_adaptive_rounds_of_the_single_run(adaptive_single, tmp_path, tiny_model_dir,
                                                                         tiny_data_dir, files_of, budget_cells_of):
    """Each shard waits for the other's first slice, both choose the same rounds from the saved cells,
    and the rounds' chunks go to whichever claims them: the folder holds the single run's files and
    cells (its scores within float rounding: the shards pool other chunks into a harness call)."""
    out = tmp_path / "out"
    base = [sys.executable, "-m", "instructeval_tasks.cli", "run", "--model", "hf",
            "--model_args", f"pretrained={tiny_model_dir},dtype=float32", *ADAPTIVE,
            "--data-dir", str(tiny_data_dir), "--output", str(out), "--device", "cpu"]
    outputs = _two_shards_at_once(base, tmp_path)
    assert all("adaptive round 2 of 2:" in output for output in outputs)
    # one line per spell of waiting (its part, the other shards' first slice, each round), not one per chunk
    assert all(output.count("waiting for chunk") <= 4 for output in outputs), outputs
    assert sorted(files_of(out)) == sorted(files_of(adaptive_single[0]))
    assert budget_cells_of(out) == adaptive_single[1]


def test_a_shard_whose_part_another_did_says_so_and_counts_alike(adaptive_single, tmp_path, tiny_model_dir, tiny_data_dir,
                                                                  capsys):
    """A shard started after the whole sweep is saved (its part of the first slice is empty here, and
    every round is saved): its lines and its summary count the same variants, all saved already."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(adaptive_single[0], out)
    assert cli_main(["run", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32", *ADAPTIVE,
                     "--data-dir", str(tiny_data_dir), "--output", str(out), "--device", "cpu", "--shard", "5/6"]) == 0
    captured = capsys.readouterr()
    err = captured.err
    assert ("shard 5/6 of the sweep: none of the 5 variants of --tasks falls to this shard (their 5 chunk(s) are dealt "
            "round-robin over 6 shards)") in err
    assert "0 of 0" not in err and "0 of 5 variants planned" not in err
    rounds = [line for line in err.splitlines() if line.startswith("adaptive round")]
    assert len(rounds) == 2 and all(", none to run" in line for line in rounds), err
    in_rounds = sum(int(line.split(", all ")[1].split(" ")[0]) for line in rounds)
    assert f"sweep finished: nothing evaluated here: the {in_rounds} variant(s) planned were saved already" in err
    assert f"{in_rounds} planned, {in_rounds} skipped (done), 0 evaluated" in captured.out


def test_a_shard_without_harness_tasks_says_so(tmp_path, tiny_model_dir, tiny_data_dir):
    lines: list[str] = []
    report = run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks=None, methods="null",
                       output=tmp_path, overrides={"instructions_per_method": 1, "test_sample": 2},
                       data_dir=str(tiny_data_dir), device="cpu", progress=False, harness_tasks="hellaswag", shard="1/2",
                       dry_run=True, echo=lines.append)
    assert (report.planned, report.skipped) == (0, 0)
    assert lines[0].startswith("shard 1/2: none of the 1 harness task(s) falls to this shard (each is one chunk; the "
                               "harness tasks are dealt round-robin over 2 shards)"), lines
    assert not any("0 of 0" in line for line in lines)
