"""Instruction banks for lm-eval's own tasks (``instruction_banks/harness/``)."""

from __future__ import annotations

import subprocess
import sys


from instructeval_banks.harness_banks import (
    HARNESS_DIR,
    PROMPTSOURCE_SOURCES,
    check_harness_banks,
    load_harness_banks,
    promptsource_file_text,
)

REQUIRED = ["hellaswag", "boolq", "anli_r1", "triviaqa", "nq_open", "gsm8k", "bbh_fewshot_navigate",
            "bbh_fewshot_sports_understanding", "bbh_fewshot_boolean_expressions", "bbh_fewshot_date_understanding",
            "bbh_fewshot_causal_judgement"]


def test_shipped_banks_are_valid_and_hold_twenty_instructions_per_task():
    banks, errors = check_harness_banks()
    assert errors == []
    for task in REQUIRED:
        entries = banks.entries("adhoc", task) + banks.entries("promptsource", task)
        assert len(entries) >= 20, task
        assert len({e.text.casefold() for e in entries}) == len(entries), f"{task}: an instruction twice"


def test_promptsource_harness_banks_are_regenerated_from_the_promptsource_banks():
    for name in PROMPTSOURCE_SOURCES:
        assert (HARNESS_DIR / "promptsource" / f"{name}.yaml").read_text(encoding="utf-8") == promptsource_file_text(name), (
            f"run: python -m instructeval_banks.harness_banks --sync ({name})")


def test_every_bank_names_tasks_the_installed_harness_has():
    from instructeval_tasks.harness.tasks import harness_index

    index = harness_index()
    banks = load_harness_banks()
    assert [t for t in banks.tasks() if t not in index] == []


def test_a_bad_harness_bank_is_refused_naming_file_and_fix(tmp_path):
    bad = tmp_path / "harness" / "adhoc"
    bad.mkdir(parents=True)
    (bad / "x.yaml").write_text("method: adhoc\ntasks: all\nprovenance: {source: me}\nentries:\n  - {id: a, text: hi}\n")
    (bad / "y.yaml").write_text("method: adhoc\ntasks: [arc_easy]\nprovenance: {source: me}\n"
                                "entries:\n  - {id: a, text: 'Answer {{question}}'}\n")
    _, errors = check_harness_banks([tmp_path])
    assert any("x.yaml: 'tasks' must list the lm-eval task names" in e for e in errors)
    assert any("y.yaml" in e and "template placeholder" in e for e in errors)
    done = subprocess.run([sys.executable, "-m", "instructeval_tasks.cli", "banks", "validate", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "FAIL" in done.stdout and "x.yaml" in done.stdout


def test_a_bank_for_another_harness_task_is_one_file(tmp_path):
    """A --bank-dir with harness/adhoc/arc_easy.yaml gives arc_easy its instructions (dry run: nothing written)."""
    from instructeval_tasks.sweep import run_sweep

    folder = tmp_path / "banks" / "harness" / "adhoc"
    folder.mkdir(parents=True)
    (folder / "arc_easy.yaml").write_text(
        "method: adhoc\ntasks: [arc_easy]\nprovenance: {source: \"written for lm-eval's arc_easy prompt\"}\n"
        "entries:\n  - {id: arc_easy-adhoc-00, text: Answer the science question.}\n"
        "  - {id: arc_easy-adhoc-01, text: Pick the correct answer.}\n")
    report = run_sweep(model="hf", model_args="pretrained=gpt2", tasks=None, methods="null,adhoc", output=tmp_path / "o",
                       profile="quick", bank_dir=str(tmp_path / "banks"), dry_run=True, progress=False,
                       harness_tasks="arc_easy,gsm8k:5")
    planned = [(h["task"], h["instruction_id"]) for h in report.plan["harness"]]
    assert ("arc_easy", "arc_easy-adhoc-00") in planned and ("arc_easy", "arc_easy-adhoc-01") in planned
    assert sum(1 for t, i in planned if t == "gsm8k" and i.startswith("gsm8k-adhoc-")) == 2  # quick: 2 per method
    assert ("gsm8k", "null") in planned
    assert not (tmp_path / "o").exists()
