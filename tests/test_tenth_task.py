"""A tenth InstructEval task is its folder, its template and its bank file, and nothing else.

The test copies the four packages into a temporary folder (by import name, as installed), adds a toy
two-class task there -- ``instructeval_tasks/toy/`` (harness YAML, ``task_spec.yaml``, README),
``templates/toy.j2`` and ``instruction_banks/adhoc/toy.yaml`` -- checks that the copy differs from the
repository in exactly those five files, and runs the copy in subprocesses as a user would: the plain
``lm_eval --include_path`` run, ``instructeval banks validate``, an ``instructeval run`` sweep over the
null and ad hoc methods, and ``instructeval aggregate``. Rows are checked against the fields the spec
declares; the aggregate lays the task out under its spec's title.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = {  # source folder -> import name (pyproject's package-dir)
    "instructeval_tasks": "instructeval_tasks",
    "templates": "instructeval_templates",
    "instruction_banks": "instructeval_banks",
    "aggregation": "instructeval_aggregation",
}

TASK_YAML = """\
# Toy reviews in the InstructEval prompt format (a test task). See README.md in this folder.
include: ../_instructeval_choice_template_yaml
task: instructeval_toy
tag: [instructeval, instructeval_cls]
dataset_path: toy/reviews
training_split: train
fewshot_split: train
test_split: test
doc_to_text: !function instructeval_templates.toy
doc_to_choice: !function instructeval_templates.toy_choices
doc_to_target: label
metadata:
  version: 1.0
  instructeval_task: toy
"""
TASK_SPEC = """\
name: toy
kind: cls
title: Toy Reviews
local_dir: toy_reviews
label_field: label
text_fields: [review]
fields:
  review: text
  label: {one_of: [0, 1]}
stock:
  none: a test task
"""
TEMPLATE = """\
{#- Toy reviews: the tenth-task test's template. -#}
{%- set choices = ["bad", "good"] -%}
Review: {{ review }}
Verdict:"""
BANK = """\
method: "adhoc"
tasks: ["toy"]
provenance:
  source: "tests/test_tenth_task.py"
entries:
  - id: "adhoc-toy-00"
    text: "Is this review good or bad?"
  - id: "adhoc-toy-01"
    text: "Say whether the reviewer liked it."
"""
ADDED = {
    "instructeval_tasks/toy/instructeval_toy.yaml": TASK_YAML,
    "instructeval_tasks/toy/task_spec.yaml": TASK_SPEC,
    "instructeval_tasks/toy/README.md": "# Toy reviews\n\nA two-class test task.\n",
    "instructeval_templates/toy.j2": TEMPLATE,
    "instructeval_banks/adhoc/toy.yaml": BANK,
}
GOOD = ["a fine film", "great acting", "loved every minute", "a joy to watch", "superb story", "wonderful cast"]
BAD = ["a dull film", "poor acting", "hated every minute", "a chore to watch", "weak story", "awful cast"]


def _copy_packages(root: Path) -> Path:
    pkgs = root / "pkgs"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for source, name in PACKAGES.items():
        shutil.copytree(REPO / source, pkgs / name, ignore=ignore)
    for rel, text in ADDED.items():
        (pkgs / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkgs / rel).write_text(text, encoding="utf-8")
    return pkgs


def _changed_files(pkgs: Path) -> set[str]:
    """Files of the copy that are new or differ from the repository's packages."""
    changed: set[str] = set()

    def walk(cmp: filecmp.dircmp, prefix: str) -> None:
        for name in cmp.left_only:
            path = Path(cmp.left) / name
            files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
            changed.update(f"{prefix}{p.relative_to(cmp.left)}" for p in files)
        changed.update(f"{prefix}{name}" for name in cmp.diff_files)
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    for source, name in PACKAGES.items():
        walk(filecmp.dircmp(pkgs / name, REPO / source, ignore=["__pycache__"]), f"{name}/")
    return changed


def _write_data(root: Path) -> Path:
    folder = root / "data" / "toy_reviews"
    folder.mkdir(parents=True)
    for split, reviews in (("train", (GOOD, BAD)), ("eval", (GOOD[::-1], BAD[::-1]))):
        rows = [{"review": text, "label": label} for label, texts in ((1, reviews[0]), (0, reviews[1])) for text in texts]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root / "data"


def _run(pkgs: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    # The copy comes first on sys.path, ahead of the installed (or editable) packages.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pkgs), os.environ.get("PYTHONPATH", "")]),
           "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("INSTRUCTEVAL_DATA_DIR", None)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tenth_task")
    return {"root": root, "pkgs": _copy_packages(root), "data": _write_data(root)}


def test_the_tenth_task_touches_only_its_folder_template_and_bank(toy):
    assert _changed_files(toy["pkgs"]) == set(ADDED)


def test_the_copy_knows_the_task_from_its_spec(toy):
    probe = (
        "import instructeval_tasks, json\n"
        "from instructeval_tasks.specs import TASK_GROUPS, get_spec\n"
        "from instructeval_tasks.rows import row_problem\n"
        "from instructeval_aggregation.catalog import TASK_TITLES, order_tasks\n"
        "spec = get_spec('instructeval_toy')\n"
        "print(json.dumps({'file': instructeval_tasks.__file__, 'kind': spec.kind, 'all': 'toy' in TASK_GROUPS['all'],\n"
        "  'title': TASK_TITLES['toy'], 'last': order_tasks(['toy', 'agnews'])[-1],\n"
        "  'bad_label': row_problem('toy', {'review': 'ok', 'label': 2}),\n"
        "  'missing': row_problem('toy', {'label': 1})}))\n"
    )
    proc = _run(toy["pkgs"], "-c", probe, cwd=toy["root"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    facts = json.loads(proc.stdout)
    assert facts["file"].startswith(str(toy["pkgs"]))
    assert facts["kind"] == "cls" and facts["all"] and facts["title"] == "Toy Reviews" and facts["last"] == "toy"
    assert facts["bad_label"] == ["label", "is 2 (int); expected one of 0, 1 (an integer)"]
    assert facts["missing"][0] == "review"


def test_lm_eval_runs_the_tenth_task(toy, tiny_model_dir):
    out = toy["root"] / "lm_eval_out"
    metadata = json.dumps({"data_dir": str(toy["data"]), "instruction": "Is this review good or bad?"})
    proc = _run(toy["pkgs"], "-m", "lm_eval", "--include_path", str(toy["pkgs"] / "instructeval_tasks"),
                "--tasks", "instructeval_toy", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir}",
                "--device", "cpu", "--batch_size", "4", "--num_fewshot", "2", "--output_path", str(out),
                "--log_samples", "--metadata", metadata, cwd=toy["root"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    assert 0.0 <= results["results"]["instructeval_toy"]["acc_per_token,none"] <= 1.0
    sample = json.loads(next(out.rglob("samples_instructeval_toy_*.jsonl")).read_text().splitlines()[0])
    prompt = sample["arguments"]["gen_args_0"]["arg_0"]
    assert prompt.startswith("Is this review good or bad?\n\nReview: ") and prompt.endswith("\nVerdict:")
    assert prompt.count("\nVerdict: ") == 2  # two demonstrations with their answers
    assert sample["arguments"]["gen_args_0"]["arg_1"] in (" bad", " good")


def test_banks_sweep_and_aggregate_take_the_tenth_task(toy, tiny_model_dir):
    proc = _run(toy["pkgs"], "-m", "instructeval_tasks.cli", "banks", "validate", cwd=toy["root"])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    runs = toy["root"] / "runs"
    proc = _run(toy["pkgs"], "-m", "instructeval_tasks.cli", "run", "--model", "hf", "--model_args",
                f"pretrained={tiny_model_dir}", "--tasks", "toy", "--methods", "null,adhoc", "--profile", "quick",
                "--test-sample", "4", "--data-dir", str(toy["data"]), "--output", str(runs), "--device", "cpu",
                "--batch_size", "4", cwd=toy["root"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = json.loads(next(runs.rglob("sweep.json")).read_text())
    assert plan["tasks"] == ["toy"]
    assert {entry[1] for entry in plan["instructions"]} == {"null", "adhoc"}
    zero_shot = sorted(name for name in plan["variants"] if name.endswith("__zs"))
    assert zero_shot == ["instructeval_toy__adhoc-toy-00__zs", "instructeval_toy__adhoc-toy-01__zs",
                         "instructeval_toy__null__zs"]
    report = toy["root"] / "report"
    proc = _run(toy["pkgs"], "-m", "instructeval_tasks.cli", "aggregate", str(runs), "--out", str(report),
                "--bootstrap", "20", cwd=toy["root"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (report / "report.html").read_text(encoding="utf-8")
    assert "Toy Reviews" in html
    assert "toy" in json.loads((report / "summary.json").read_text())["tasks"]
