"""The sweep runner: plan shape, recorded protocol, demo selections/orderings, and resuming."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from instructeval_banks import load_bank
from instructeval_tasks.sweep import build_plan, get_profile, run_sweep
from instructeval_tasks.sweep.chunk import default_device
from instructeval_tasks.sweep.store import SweepStoreError

REPO = Path(__file__).resolve().parents[2]


def _variants(out_dir: Path) -> dict[str, dict]:
    """Every variant in the results files of a sweep folder: name -> {metadata, results}."""
    found: dict[str, dict] = {}
    for path in sorted(out_dir.rglob("results_*.json")):
        data = json.loads(path.read_text())
        for name, result in data["results"].items():
            assert name not in found, f"{name} saved twice"
            found[name] = {"meta": data["configs"][name]["metadata"], "result": result, "file": path}
    return found


def test_quick_profile_plan_has_every_setting_per_instruction():
    profile = get_profile("quick")
    plan = build_plan(["agnews", "nq_open"], ["null", "generic"], profile, load_bank())
    per_instruction = 1 + profile.n_selections + profile.n_perturbed_selections + profile.n_orderings
    # null has one instruction; generic is sampled down to instructions_per_method.
    assert len(plan) == 2 * (1 + profile.instructions_per_method) * per_instruction
    assert len({v.name for v in plan}) == len(plan)
    codes = [v.setting_code for v in plan if v.task == "agnews" and v.entry.method == "null"]
    assert codes == ["zs", "fs-d0", "fs-d1", "pt-d0", "pt-d1", "or-d0-o1", "or-d0-o2"]


def test_original_profile_orders_five_sets_five_times():
    profile = get_profile("original")
    plan = build_plan(["anli"], ["null"], profile, load_bank())
    orderings = [(v.demo_seed, v.order_seed) for v in plan if v.setting == "ordering"]
    assert orderings == [(s, j) for s in range(5) for j in range(1, 6)]
    assert sum(v.setting == "few_shot" for v in plan) == 30


def test_unknown_names_are_clear_errors(tmp_path, tiny_data_dir):
    with pytest.raises(ValueError, match="unknown task.*agnewz.*known"):
        run_sweep(model="dummy", model_args="", tasks="agnewz", methods="null", output=tmp_path, dry_run=True)
    with pytest.raises(Exception, match="no method 'generik'|unknown method"):
        run_sweep(model="dummy", model_args="", tasks="agnews", methods="generik", output=tmp_path, dry_run=True)
    with pytest.raises(ValueError, match="unknown profile"):
        run_sweep(model="dummy", model_args="", tasks="agnews", methods="null", output=tmp_path, profile="fast")


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory, tiny_model_dir, tiny_data_dir):
    out = tmp_path_factory.mktemp("sweep")
    report = run_sweep(
        model="hf",
        model_args=f"pretrained={tiny_model_dir},dtype=float32",
        tasks="agnews,nq_open",
        methods="null,generic",
        output=out,
        profile="quick",
        overrides={"instructions_per_method": 1, "test_sample": 4},
        data_dir=str(tiny_data_dir),
        progress=False,  # no device: the runner picks one (cpu here, not HFLM's failing "cuda" default)
    )
    return out, report


def test_sweep_records_the_protocol_of_every_variant(finished_sweep):
    out, report = finished_sweep
    variants = _variants(out)
    assert report.evaluated == report.planned == len(variants) == 2 * 2 * 7
    for name, found in variants.items():
        meta = found["meta"]
        for key in ("instructeval_task", "method", "instruction_id", "instruction_sha", "setting", "demo_seed",
                    "order_seed", "perturbation", "num_fewshot", "template_sha", "demo_ids", "test_ids", "sweep",
                    "variant_fingerprint"):
            assert key in meta, (name, key)
        assert meta["sweep"]["name"] == "quick"
        metric = "quasi_exact_match,none" if meta["instructeval_task"] == "nq_open" else "acc_per_token,none"
        assert metric in found["result"], name
        if meta["setting"] == "perturbed":
            assert meta["perturbation"] == "mild_mix" and meta["perturbation_mode"] == "document"
        if meta["setting"] == "zero_shot":
            assert meta["num_fewshot"] == 0 and meta["demo_ids"] == []
    sweep_json = json.loads(next(out.rglob("sweep.json")).read_text())
    assert sweep_json["profile"]["name"] == "quick" and len(sweep_json["variants"]) == len(variants)
    configs = [json.loads(p.read_text())["config"] for p in report.result_files]
    assert {c["device"] for c in configs} == {default_device("hf")} != {None}
    # each results file records its evaluation time, as lm_eval's CLI does (the verdict's cost per cell reads it)
    assert all(float(json.loads(p.read_text())["total_evaluation_time_seconds"]) > 0 for p in report.result_files)


def test_default_device_only_for_local_hf_backends():
    import torch

    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert default_device("hf") == default_device("instructeval-hf") == expected
    assert default_device("local-completions") is None and default_device("vllm") is None


def test_selections_differ_and_orderings_permute_one_set(finished_sweep):
    out, _ = finished_sweep
    variants = _variants(out)
    ids = {name: v["meta"]["demo_ids"] for name, v in variants.items()}
    base = "instructeval_agnews__null__"
    assert ids[base + "fs-d0"] != ids[base + "fs-d1"]
    assert ids[base + "pt-d0"] == ids[base + "fs-d0"]  # perturbation keeps the demo set
    for order in (1, 2):
        ordered = ids[base + f"or-d0-o{order}"]
        assert sorted(ordered) == sorted(ids[base + "fs-d0"])
    assert ids[base + "or-d0-o1"] != ids[base + "or-d0-o2"] or ids[base + "or-d0-o1"] != ids[base + "fs-d0"]


def test_samples_show_the_same_demos_for_every_document(finished_sweep):
    out, _ = finished_sweep
    samples = sorted(out.rglob("samples_instructeval_agnews__null__fs-d1_*.jsonl"))
    assert len(samples) == 1
    rows = [json.loads(line) for line in samples[0].read_text().splitlines()]
    assert [r["doc_id"] for r in rows] == list(range(len(rows))) and len(rows) == 4
    prefixes = {r["arguments"]["gen_args_0"]["arg_0"].rsplit("\n\n", 1)[0] for r in rows}
    assert len(prefixes) == 1  # instruction + demos identical across test documents


def test_rerun_skips_everything_and_a_changed_protocol_is_refused(finished_sweep, tiny_model_dir, tiny_data_dir):
    out, report = finished_sweep
    common = dict(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews,nq_open",
                  methods="null,generic", output=out, profile="quick", data_dir=str(tiny_data_dir), device="cpu",
                  progress=False)
    again = run_sweep(**common, overrides={"instructions_per_method": 1, "test_sample": 4})
    assert (again.skipped, again.evaluated) == (report.planned, 0)
    with pytest.raises(SweepStoreError, match="different protocol"):
        run_sweep(**common, overrides={"instructions_per_method": 1, "test_sample": 8}, dry_run=True)


def _sweep_args(tiny_model_dir: Path, tiny_data_dir: Path, out: Path, tasks: str) -> list[str]:
    return ["run", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32",
            "--tasks", tasks, "--methods", "null,generic", "--profile", "quick",
            "--instructions-per-method", "2", "--test-sample", "4", "--data-dir", str(tiny_data_dir),
            "--output", str(out), "--device", "cpu"]


def _run_cli(args: list[str], log: Path) -> tuple[int, str]:
    """Run ``instructeval ARGS`` to completion; output goes to a file (a pipe could fill and block)."""
    with log.open("w") as sink:
        code = subprocess.run([sys.executable, "-m", "instructeval_tasks.cli", *args], cwd=REPO,
                              stdout=sink, stderr=subprocess.STDOUT, timeout=600).returncode
    return code, log.read_text()


def _interrupt_after_first_chunk(args: list[str], out: Path, sig: int, log: Path) -> tuple[int, str]:
    """Start a sweep, send ``sig`` as soon as its first results file exists, return (code, output)."""
    with log.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "instructeval_tasks.cli", *args], cwd=REPO,
                                stdout=sink, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if list(out.rglob("results_*.json")):
                proc.send_signal(sig)
                break
            time.sleep(0.02)
        code = proc.wait(timeout=300)
    return code, log.read_text()


def test_kill_9_mid_sweep_then_rerun_finishes_without_recomputing(tmp_path, tiny_model_dir, tiny_data_dir):
    out = tmp_path / "out"
    args = _sweep_args(tiny_model_dir, tiny_data_dir, out, "agnews,boolq,emotion")
    code, output = _interrupt_after_first_chunk(args, out, signal.SIGKILL, tmp_path / "first.log")
    assert code == -signal.SIGKILL, "the sweep finished before it could be killed:\n" + output[-2000:]
    finished_before = set(_variants(out))
    total = 3 * 3 * 7
    assert 0 < len(finished_before) < total

    code, output = _run_cli(args, tmp_path / "second.log")
    assert code == 0, output[-3000:]
    assert f"{total} planned, {len(finished_before)} skipped (done), {total - len(finished_before)} evaluated" in output
    variants = _variants(out)  # also asserts that no variant is saved twice
    assert len(variants) == total
    samples = list(out.rglob("samples_*.jsonl"))
    assert len(samples) == total  # stale sample files of the killed chunk were replaced, not duplicated


def test_ctrl_c_stops_cleanly_and_the_rerun_resumes(tmp_path, tiny_model_dir, tiny_data_dir):
    out = tmp_path / "out"
    args = _sweep_args(tiny_model_dir, tiny_data_dir, out, "agnews,imdb")
    code, output = _interrupt_after_first_chunk(args, out, signal.SIGINT, tmp_path / "first.log")
    assert code == 130, output[-2000:]
    assert "Run the same command again to resume" in output
    partial = len(_variants(out))
    assert 0 < partial < 2 * 3 * 7
    code, output = _run_cli(args, tmp_path / "second.log")
    assert code == 0, output[-3000:]
    assert f"{partial} skipped (done)" in output
    assert len(_variants(out)) == 2 * 3 * 7


def test_the_stop_message_is_the_last_line_even_with_a_progress_bar_alive(monkeypatch, capsys):
    """A SIGTERM that lands in the harness's loop leaves its progress bar in the traceback's frames;
    freed at exit, the bar printed its last line after "terminated". The frames are freed first."""
    import instructeval_tasks.commands.run as run_command
    from instructeval_tasks.cli import main
    from instructeval_tasks.sweep.interrupts import Terminated

    class Bar:  # closes, printing its last state, when its frame is freed (as tqdm does)
        def __del__(self):
            print("Running loglikelihood requests: 0/16", file=sys.stderr)

    def evaluate(args):
        bar = Bar()  # noqa: F841  (held by this frame, as the harness's loop holds its bar)
        try:
            raise RuntimeError("inside the harness")
        except RuntimeError:
            raise Terminated("SIGTERM")

    monkeypatch.setattr(run_command, "run", evaluate)
    assert main(["run", "--model", "hf", "--tasks", "agnews", "--output", "unused"]) == 143
    err = capsys.readouterr().err
    assert err.rstrip().endswith("terminated") and "0/16" in err


def test_sigterm_says_what_is_saved_and_the_rerun_resumes(tmp_path, tiny_model_dir, tiny_data_dir):
    """SIGTERM (kill, a scheduler's stop) used to end the sweep without a word; the resume was right."""
    out = tmp_path / "out"
    args = _sweep_args(tiny_model_dir, tiny_data_dir, out, "agnews,imdb")
    code, output = _interrupt_after_first_chunk(args, out, signal.SIGTERM, tmp_path / "first.log")
    assert code == 143, output[-2000:]
    assert "terminated (SIGTERM) after " in output and "Run the same command again to resume." in output
    assert output.rstrip().endswith("terminated") and "Traceback" not in output
    partial = len(_variants(out))
    assert 0 < partial < 2 * 3 * 7
    code, output = _run_cli(args, tmp_path / "second.log")
    assert code == 0, output[-3000:]
    assert f"{partial} skipped (done)" in output and len(_variants(out)) == 2 * 3 * 7


def test_a_sigterm_swallowed_where_it_landed_still_stops_after_the_chunk(tmp_path, tiny_data_dir, monkeypatch,
                                                                        capfd):
    """The handler's ``Terminated`` can land in a destructor, where Python reports "Exception ignored
    in ..." and runs on; the recorded request stops the sweep at the next chunk, without that report."""
    import gc
    import os

    from instructeval_tasks.sweep import chunk
    from instructeval_tasks.sweep.interrupts import Terminated

    class SignalledInDestructor:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here, in the main thread
            time.sleep(0.5)

    evaluate_jobs, calls = chunk.evaluate_jobs, []

    def evaluate_then_drop_the_object(*args, **kwargs):
        calls.append(1)
        outcome = evaluate_jobs(*args, **kwargs)
        SignalledInDestructor()  # dropped at once: __del__ runs, its exception is swallowed
        gc.collect()
        return outcome

    monkeypatch.setattr(chunk, "evaluate_jobs", evaluate_then_drop_the_object)
    previous = signal.getsignal(signal.SIGTERM), sys.unraisablehook
    with pytest.raises(Terminated):
        run_sweep(model="dummy", model_args="", tasks="agnews,imdb", methods="null,generic", output=tmp_path,
                  overrides={"instructions_per_method": 1, "test_sample": 2, "settings": ["zero_shot"]},
                  data_dir=str(tiny_data_dir), progress=False)
    assert len(calls) == 1 and len(list(tmp_path.rglob("results_*.json"))) == 1  # the chunk is saved, no other ran
    assert (signal.getsignal(signal.SIGTERM), sys.unraisablehook) == previous
    assert "Exception ignored" not in capfd.readouterr().err


def test_chunks_share_one_task_manager_without_the_builtin_index(tmp_path, tiny_data_dir, monkeypatch):
    """simple_evaluate given no manager indexes every built-in harness task on each call; the runner
    evaluates chunk by chunk, so it must hand over one index-free manager."""
    from lm_eval.tasks import TaskManager

    import instructeval_tasks

    instructeval_tasks.object_task_manager.cache_clear()
    built: list[bool] = []
    init = TaskManager.__init__

    def counting_init(self, *args, **kwargs):
        built.append(bool(kwargs.get("include_defaults", True)))
        init(self, *args, **kwargs)

    monkeypatch.setattr(TaskManager, "__init__", counting_init)
    report = run_sweep(model="dummy", model_args="", tasks="agnews,imdb", methods="null,generic", output=tmp_path,
                       overrides={"instructions_per_method": 1, "test_sample": 2, "settings": ["zero_shot"]},
                       data_dir=str(tiny_data_dir), progress=False)
    assert report.evaluated == 4 and len(report.result_files) == 4  # four chunks, one variant each
    assert built == [False]
