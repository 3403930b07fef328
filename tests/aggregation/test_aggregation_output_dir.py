"""The report folder is replaced whole or not at all; leftovers of a killed run are repaired."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import instructeval_aggregation.csv_cells as csv_cells
from instructeval_aggregation import aggregate, load_runs, write_report
from instructeval_aggregation.issues import AggregationError
from instructeval_aggregation.output_dir import check_out_dir
from instructeval_aggregation.testing import grid, sweep_record, write_run
from instructeval_tasks.cli import main as cli_main


def small_runs(root: Path, shift: float = 0.0) -> Path:
    def accuracy(task, method, iid, setting, demo, order):
        base = {"null": 0.5, "generic": 0.6}[method] + shift
        return [1 if (i * 7 + (demo or 0) + (order or 0)) % 10 < base * 10 else 0 for i in range(20)]

    write_run(root, "SmolLM2-135M", grid(["agnews"], [("null", "null"), ("generic", "generic-0")], accuracy), sweep=sweep_record())
    return root


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def siblings(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def test_failed_write_keeps_the_previous_report(tmp_path, monkeypatch, capsys):
    """A full disk after some CSVs are written: exit 1, the old report byte-identical, no temp folder left."""
    out = tmp_path / "report"
    assert cli_main(["aggregate", str(small_runs(tmp_path / "old")), "--out", str(out), "--bootstrap", "0", "--no-plots"]) == 0
    before = tree(out)
    calls = {"n": 0}
    real_csv = csv_cells.write_csv

    def csv_then_full_disk(frame, path):
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_csv(frame, path)

    monkeypatch.setattr(csv_cells, "write_csv", csv_then_full_disk)  # the nine tasks' data files
    capsys.readouterr()
    new_runs = small_runs(tmp_path / "new", shift=0.2)
    assert cli_main(["aggregate", str(new_runs), "--out", str(out), "--bootstrap", "0", "--no-plots"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("instructeval: error: writing the report failed") and "unchanged" in err[0]
    assert calls["n"] == 4
    assert tree(out) == before  # old report.html and old CSVs, nothing new beside them
    assert siblings(out) == []
    monkeypatch.setattr(csv_cells, "write_csv", real_csv)
    assert cli_main(["aggregate", str(new_runs), "--out", str(out), "--bootstrap", "0", "--no-plots"]) == 0
    after = tree(out)
    assert after.keys() == before.keys() and after["data/gains.csv"] != before["data/gains.csv"]


def test_a_new_report_drops_stale_files(tmp_path):
    """Plots of an earlier run do not survive beside a report written without plots."""
    out = tmp_path / "report"
    (out / "plots").mkdir(parents=True)
    (out / "plots" / "heatmap_gain_few_shot.svg").write_text("<svg/>")
    write_report(aggregate(load_runs([small_runs(tmp_path / "runs")]), n_boot=0), out, plots=False)
    assert not (out / "plots").exists() and (out / "report.html").is_file()


KILLED_MID_SWAP = textwrap.dedent(
    """
    import os, sys
    from instructeval_aggregation import aggregate, load_runs, write_report
    import instructeval_aggregation.output_dir as output_dir
    renames = []
    real_rename = os.rename
    def rename(src, dst):
        renames.append((src, dst))
        real_rename(src, dst)
        if len(renames) == 1:
            os._exit(9)  # killed between 'old -> .previous' and 'new -> out'
    output_dir.os.rename = rename
    write_report(aggregate(load_runs([sys.argv[1]]), n_boot=0), sys.argv[2], plots=False)
    """
)


def test_kill_between_the_renames_is_repaired_on_the_next_run(tmp_path):
    out = tmp_path / "report"
    runs = small_runs(tmp_path / "runs")
    write_report(aggregate(load_runs([runs]), n_boot=0), out, plots=False)
    before = tree(out)
    proc = subprocess.run([sys.executable, "-c", KILLED_MID_SWAP, str(runs), str(out)], capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    assert not out.exists()
    assert len(siblings(out)) == 2  # .report.previous-<pid> (the old report) and .report.partial-<pid>
    assert cli_main(["aggregate", str(tmp_path / "nosuch.json"), "--out", str(out)]) == 2  # a bad option touches nothing
    assert not out.exists()
    # the next run that gets as far as --out puts the previous report back, even if it then fails
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "results_x.json").write_text("{")
    assert cli_main(["aggregate", str(tmp_path / "broken"), "--out", str(out), "--no-plots"]) == 2
    assert tree(out) == before and siblings(out) == []


def test_kill_while_writing_leaves_a_temp_folder_that_the_next_run_removes(tmp_path):
    out = tmp_path / "report"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    partial = tmp_path / f".report.partial-{int(dead.stdout)}"
    (partial / "data").mkdir(parents=True)
    (partial / "data" / "gains.csv").write_text("half")
    running = tmp_path / f".report.partial-{os.getppid()}"  # a live process's folder is left alone
    running.mkdir()
    assert cli_main(["aggregate", str(small_runs(tmp_path / "runs")), "--out", str(out), "--bootstrap", "0", "--no-plots"]) == 0
    assert not partial.exists() and running.exists()
    assert (out / "report.html").is_file()


def test_out_must_be_a_report_folder(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(AggregationError, match="is a file"):
        check_out_dir(tmp_path / "file.txt")
    with pytest.raises(AggregationError, match="is a file"):
        check_out_dir(tmp_path / "file.txt" / "report")
    runs = small_runs(tmp_path / "runs")
    with pytest.raises(AggregationError, match="not part of a report"):
        check_out_dir(runs)  # --out runs/ would otherwise replace the inputs
    assert any(runs.rglob("results_*.json"))
    assert check_out_dir(tmp_path / "a" / "b" / "report") == (tmp_path / "a" / "b" / "report").resolve()
