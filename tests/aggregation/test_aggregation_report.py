"""Outputs: byte-identical re-runs, the CLI, the HTML report, the model registry."""

from __future__ import annotations

import json
import math
import random
import struct
from pathlib import Path

import pytest

from instructeval_aggregation import aggregate, load_runs, write_report
from instructeval_aggregation.issues import IssueLog
from instructeval_aggregation.registry import Registry, estimate_parameters, resolve_models, safetensors_parameters
from instructeval_aggregation.testing import grid, sweep_record, write_run
from instructeval_tasks.cli import main as cli_main

INSTRUCTIONS = [("null", "null"), ("generic", "generic-0"), ("generic", "generic-1"), ("promptsource", "ps-0"), ("ape", "ape-0")]


def sweep_dir(root: Path) -> Path:
    """Two models x three tasks x five instructions, every setting, 30 items, per-sample logs."""
    for model in ("SmolLM2-135M", "opt-6.7b"):
        def accuracy(task, method, iid, setting, demo, order, model=model):
            rng = random.Random(f"{model}|{task}|{iid}|{setting}|{demo}|{order}")
            p = {"null": 0.5, "generic": 0.55, "promptsource": 0.6, "ape": 0.45}[method]
            return [1 if rng.random() < p else 0 for _ in range(30)]

        write_run(root, model, grid(["agnews", "hellaswag", "nq_open"], INSTRUCTIONS, accuracy), sweep=sweep_record())
    return root


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_same_input_gives_byte_identical_outputs(tmp_path):
    """Two runs (inputs listed in different orders) write identical tables, data, summary and SVGs."""
    runs = sweep_dir(tmp_path / "runs")
    first = aggregate(load_runs([runs]), n_boot=100)
    write_report(first, tmp_path / "one")
    second = aggregate(load_runs(sorted((runs).rglob("results_*.json"), reverse=True)), n_boot=100)
    write_report(second, tmp_path / "two")
    one, two = tree(tmp_path / "one"), tree(tmp_path / "two")
    assert one.keys() == two.keys()
    compared = [k for k in one if k.startswith(("tables/", "data/")) or k == "summary.json" or k.endswith(".svg")]
    assert len(compared) > 100
    different = [k for k in compared if one[k] != two[k]]
    assert different == []
    assert b"-0.000 " not in one["tables/tables.md"] and b"| -0.000 |" not in one["tables/tables.md"]


def test_report_contents(tmp_path):
    runs = sweep_dir(tmp_path / "runs")
    result = aggregate(load_runs([runs]), n_boot=50, seed="recorded-seed")
    written = write_report(result, tmp_path / "out")
    out = tmp_path / "out"
    for name in ("gain_zero_shot", "gain_few_shot", "gain_perturbed", "gain_worst_case", "sensitivity_selectional",
                 "sensitivity_permutational", "wins", "ci_few_shot", "types_gain_few_shot", "family_gain_zero_shot",
                 "scale_gain_few_shot", "maxp_few_shot", "avgp_few_shot", "variation_range", "significance_few_shot"):
        for ext in ("md", "csv", "tex"):
            assert (out / "tables" / f"{name}.{ext}").is_file(), f"{name}.{ext}"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["options"]["seed"] == "recorded-seed"
    assert summary["runs"][0]["sweep"]["profile"] == "test"
    html = Path(written["report"]).read_text()
    assert html.startswith("<!DOCTYPE html>") and "recorded-seed" in html
    assert "<script" not in html and 'src="http' not in html  # self-contained
    pytest.importorskip("matplotlib")
    assert {Path(p).name for p in written["plots"]} >= {"heatmap_gain_few_shot.png", "heatmap_gain_few_shot.svg",
                                                       "bars_sensitivity_selectional.svg"}
    assert html.count("data:image/svg+xml;base64,") >= 6
    assert b"<dc:date>" not in (out / "plots" / "heatmap_gain_few_shot.svg").read_bytes()


def test_every_table_is_in_the_report_or_the_build_fails(tmp_path):
    from instructeval_aggregation.report import unsectioned_tables

    runs = sweep_dir(tmp_path / "runs")
    result = aggregate(load_runs([runs]), n_boot=0)
    html = Path(write_report(result, tmp_path / "out", plots=False)["report"]).read_text()
    assert not unsectioned_tables(result.tables)
    for name, table in result.tables.items():  # each table's title is in report.html
        assert table.title.split(" (")[0].replace("&", "&amp;") in html, name
    result.tables["novel_table"] = next(iter(result.tables.values()))
    with pytest.raises(RuntimeError, match=r"\['novel_table'\] belong to no section of report.html"):
        write_report(result, tmp_path / "out2", plots=False)


def test_cli_exit_codes(tmp_path):
    runs = sweep_dir(tmp_path / "runs")
    assert cli_main(["aggregate", str(runs), "--out", str(tmp_path / "ok"), "--bootstrap", "20", "--no-plots"]) == 0
    assert (tmp_path / "ok" / "tables" / "gain_few_shot.md").is_file()
    (runs / "SmolLM2-135M" / "results_broken.json").write_text("{")
    # 3: written, but an input was dropped (distinct from 1, a failed write, and 2, a user error)
    assert cli_main(["aggregate", str(runs), "--out", str(tmp_path / "err"), "--bootstrap", "0", "--no-plots"]) == 3
    assert (tmp_path / "err" / "report.html").is_file()  # the good files still give a report
    assert cli_main(["aggregate", str(runs), "--out", str(tmp_path / "strict"), "--strict", "--no-plots"]) == 2
    assert not (tmp_path / "strict").exists()
    assert cli_main(["aggregate", str(tmp_path / "missing"), "--out", str(tmp_path / "none")]) == 2
    assert not (tmp_path / "none").exists()


def test_registry_patterns_and_user_override(tmp_path):
    registry = Registry.load()
    cases = {
        "bigscience/bloom-7b1": ("BLOOM", 7.069),
        "bloom1b1": ("BLOOM", 1.065),
        "EleutherAI/gpt-neox-20b": ("GPT Neo", 20.554),
        "gptneo2b7": ("GPT Neo", 2.718),
        "llama13b": ("LLaMA", 13.016),
        "facebook/opt-1.3b": ("OPT", 1.316),
        "facebook__opt-13b": ("OPT", 12.853),
        "SmolLM2-135M-Instruct": ("SmolLM", 0.135),
        "HuggingFaceTB/SmolLM2-360M": ("SmolLM", None),
        "gemma-3-270m": ("Gemma", 0.268),
        "Qwen2.5-Coder-0.5B-Instruct": ("Qwen", 0.494),
        "models/qwen2.5-coder-1.5b-instruct": ("Qwen", 1.544),
    }
    for name, (family, params) in cases.items():
        entry = registry.match([name], user=False)
        assert entry is not None and (entry.family, entry.params_b) == (family, params), name
    assert registry.match(["facebook/opt-125m"], user=False) is None
    user_file = tmp_path / "mine.yaml"
    user_file.write_text("entries:\n  - {pattern: 'opt-1\\.3b', family: Custom, params_b: 9.5}\n")
    issues = IssueLog()
    models = resolve_models({"facebook/opt-1.3b": {"pretrained": ["facebook/opt-1.3b"]}}, Registry.load([user_file]), issues, threshold_b=6)
    row = models.iloc[0]
    assert (row["family"], row["params_b"], row["scale"]) == ("Custom", 9.5, ">=6B")


def test_parameters_from_a_local_checkpoint(tmp_path):
    """config.json estimate (SmolLM2-135M shape: 134,479,872) and exact safetensors header counts."""
    config = {"model_type": "llama", "hidden_size": 576, "num_hidden_layers": 30, "intermediate_size": 1536,
              "num_attention_heads": 9, "num_key_value_heads": 3, "vocab_size": 49152, "tie_word_embeddings": True}
    assert estimate_parameters(config) == 134_479_872
    ckpt = tmp_path / "tiny-model"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps(config))
    issues = IssueLog()
    models = resolve_models({"tiny-model": {"pretrained": [str(ckpt)]}}, Registry.load(), issues)
    assert models.iloc[0]["params_b"] == pytest.approx(0.134479872)
    assert models.iloc[0]["family"] == "LLaMA" and "config.json" in models.iloc[0]["params_source"]
    header = json.dumps({"a": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]},
                         "b": {"dtype": "F32", "shape": [5], "data_offsets": [48, 68]}, "__metadata__": {}}).encode()
    (ckpt / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 68)
    assert safetensors_parameters(ckpt) == 17
    models = resolve_models({"tiny-model": {"pretrained": [str(ckpt)]}}, Registry.load(), issues)
    assert models.iloc[0]["params_b"] == pytest.approx(17e-9) and "safetensors" in models.iloc[0]["params_source"]


def test_unknown_model_falls_back_to_results_then_warns(tmp_path):
    issues = IssueLog()
    models = resolve_models({"mystery": {"model_num_parameters": [7.1e9]}, "void": {}}, Registry.load(), issues)
    by = models.set_index("model")
    assert by.loc["mystery", "params_b"] == pytest.approx(7.1) and by.loc["mystery", "scale"] == ">=6B"
    assert math.isnan(by.loc["void", "params_b"]) and by.loc["void", "scale"] == "unknown"
    assert {i.code for i in issues.items} == {"model-size", "model-family"}


def _headings(html: str) -> list[tuple[str, str]]:
    import re

    return [(m.group(1), re.sub(r"<[^>]+>", "", m.group(2))) for m in re.finditer(r"<(h[23])>(.*?)</\1>", html)]


def test_significant_pairs_sit_under_significance(tmp_path):
    """The "Significant pairs" list is part of the Significance section, not of the last table section."""
    runs = sweep_dir(tmp_path / "runs")
    result = aggregate(load_runs([runs]), n_boot=50)
    assert result.significance is not None and not result.significance.empty
    html = Path(write_report(result, tmp_path / "out", plots=False)["report"]).read_text()
    headings = _headings(html)
    h2 = [text for level, text in headings if level == "h2"]
    pairs = next(i for i, (level, text) in enumerate(headings) if text.startswith("Significant pairs"))
    owner = next(text for level, text in reversed(headings[:pairs]) if level == "h2")
    assert owner == "Significance"
    assert h2.index("Significance") < h2.index("By model scale (paper Table 8)")
    # the pair list follows the section's own tables and comes before the next section
    section = html[html.index("<h2>Significance</h2>") : html.index("<h2>AvgP and MaxP</h2>")]
    assert "<caption>" in section.split("Significant pairs")[0]
    assert "Significant pairs" in section


def test_html_frames_align_counts_as_numbers_and_leave_missing_cells_empty():
    """Seen in a browser: counts sat left like text and a missing --limit printed 'None'."""
    import numpy as np
    import pandas as pd

    from instructeval_aggregation.report import CSS, _frame_html

    frame = pd.DataFrame({"file": ["a.json"], "variants": [np.int64(150)], "limit": [None], "acc": [0.5]})
    html = _frame_html(frame)
    assert '<td class="l">a.json</td><td>150</td><td></td><td>0.500</td>' in html and "None" not in html
    assert "white-space:nowrap" in CSS.split("caption{", 1)[1].split("}", 1)[0]  # captions on one line


def test_the_last_line_names_the_report_as_out_was_given(tmp_path, monkeypatch, capsys):
    """The README quotes `wrote ... and report/report.html (...)` after `instructeval aggregate runs/ --out report/`."""
    from instructeval_aggregation.testing import SyntheticVariant, write_run
    from instructeval_tasks.cli import main as cli_main

    write_run(tmp_path / "runs", "m", [SyntheticVariant("agnews", m, i, "zero_shot", correct=[1, 0, 1, 1] * 5)
                                       for m, i in (("null", "null"), ("generic", "generic-0"))])
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert cli_main(["aggregate", "runs/", "--out", "report/", "--no-plots", "--bootstrap", "20"]) in (0, 3)
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("wrote ") and " figures and report/report.html (" in last
