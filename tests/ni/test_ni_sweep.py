"""``instructeval run --tasks ni_...``: the header encodings swept as instructions with the tiny offline model,
resumed, and ``instructeval aggregate``'s Natural Instructions report on the folder."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from instructeval_tasks.errors import UserError
from instructeval_tasks.ni.prompt import render_header
from instructeval_tasks.ni.source import read_task_file
from instructeval_tasks.sweep import run_sweep

SNLI, COPA = "ni_task190_snli_classification", "ni_task828_copa_commonsense_cause_effect"
SWEEP_DIR = Path(__file__).resolve().parents[2] / "instructeval_tasks" / "sweep"


@pytest.fixture(scope="module")
def two_tasks(tmp_path_factory, ni) -> Path:
    """task190 (one negative example) and task828 (no negative example, its own category), 4 instances each."""
    root = tmp_path_factory.mktemp("ni_two")
    ni.write_task(root, ni.toy_task(4))
    copa = ni.toy_task(4)
    copa["Categories"], copa["Negative Examples"] = ["Cause Effect Classification"], []
    return ni.write_task(root, copa, COPA.removeprefix("ni_"))


def _sweep(model: Path, data: Path, out: Path, lines: list[str], **extra):
    return run_sweep(model="hf", model_args=f"pretrained={model},dtype=float32", device="cpu", tasks=f"{SNLI},{COPA}",
                     methods="null", overrides={"test_sample": 3}, data_dir=str(data), output=str(out),
                     progress=False, echo=lines.append, **extra)


@pytest.fixture(scope="module")
def swept(tiny_model_dir, two_tasks, tmp_path_factory):
    out = tmp_path_factory.mktemp("ni_sweep")
    first, second = [], []
    reports = _sweep(tiny_model_dir, two_tasks, out, first), _sweep(tiny_model_dir, two_tasks, out, second)
    return out, reports, first, second


def test_sweep_plans_each_distinct_header_encoding_and_resumes(swept):
    out, (first, second), lines, again = swept
    # task190: null + 9 encodings; task828 (no negatives): the 3 encodings that would repeat another's text left out
    assert first.planned == 17 and first.evaluated == 17
    assert second.evaluated == 0 and second.skipped == second.planned == 17
    plan_line = next(line for line in lines if "Natural Instructions task(s)" in line)
    assert f"{COPA}: definition_pos2_neg2, definition_pos2_neg2_explanations, full" in plan_line
    assert any("17 variants planned, 17 already done, 0 to run" in line for line in again)


def test_header_variant_prompts_are_the_task_header(swept, two_tasks):
    out = swept[0]
    task_file = read_task_file("task190_snli_classification", str(two_tasks))
    name = f"instructeval_{SNLI}__ni_header-task190_snli_classification-definition_pos2_neg2__zs"
    (samples,) = out.rglob(f"samples_{name}_*.jsonl")
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    assert len(rows) == 3
    header = render_header(task_file, "definition_pos2_neg2")
    for row in rows:
        assert row["arguments"]["gen_args_0"]["arg_0"] == f"{header}\n\nInput: {row['doc']['input']}\nOutput:"


def test_budget_is_refused_for_ni_tasks_in_one_line(tiny_model_dir, two_tasks, tmp_path):
    with pytest.raises(UserError) as err:
        _sweep(tiny_model_dir, two_tasks, tmp_path / "out", [], budget=0.5)
    assert str(err.value).startswith(f"--budget with --tasks {SNLI}: the Natural Instructions tasks are swept on every")
    assert not (tmp_path / "out").exists()


def test_every_sweep_function_is_at_most_50_lines():
    long = []
    for path in sorted(SWEEP_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 50:
                long.append(f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long
