"""``instructeval induce`` and ``instructeval run`` on Instruction Induction tasks, with scripted LMs:
induction reads only ``raw/induce``; the sweep plans zero-shot execution only."""

from __future__ import annotations

import json

import pytest
import yaml

from instructeval_tasks.induce.run import run_induce
from instructeval_tasks.ii.names import source_name
from instructeval_tasks.sweep import run_sweep
from instructeval_tasks.sweep.plan import build_plan
from instructeval_tasks.sweep.profiles import get_profile
from instructeval_banks import load_bank

TASKS = ("antonyms", "sum")


@pytest.fixture
def induce_only_dir(tmp_path, ii):
    """raw/induce only: an induction that touched raw/execute would fail."""
    return ii.write_raw_dir(tmp_path / "data", tasks=TASKS, splits=("induce",))


def test_ape_induces_from_raw_induce_only_and_ranks_by_execution_accuracy(induce_only_dir, tmp_path, ii):
    def reply(context):
        if context.endswith("The instruction was"):  # the meta-prompt
            return " to write the output for the input.\n\nmore"
        # execution on the held-out slice: answer right on "... 100"/"... 102"/..., wrong otherwise
        value = context.rsplit("Input: ", 1)[1].split("\n")[0]
        return f" out {value}" if int(value.split()[-1]) % 2 == 0 else " no idea"

    lm = ii.ScriptedLM(reply)
    report = run_induce(method="ape", model="scripted", model_args="pretrained=models/scripted", lm=lm,
                        tasks="ii_antonyms,ii_sum", data_dir=str(induce_only_dir), output=tmp_path / "out",
                        progress=False, n_demo_sets=1, n_demos=2, n_samples=0, n_exec=4, echo=lambda line: None)
    assert [p.name for p in report.written] == ["ii_antonyms.yaml", "ii_sum.yaml"]
    bank = yaml.safe_load(report.written[0].read_text())
    prov = bank["provenance"]
    assert prov["data_source"].endswith("instruction_induction/raw/induce/antonyms.json")
    assert prov["settings"]["truncate_words"] is None
    assert bank["entries"][0]["text"] == "write the output for the input."
    # 4 held-out induce rows (inputs "antonyms 100".."antonyms 105"): the exec slice indices decide the score
    slice_ids = prov["exec_slice"]["train_indices"]
    expected = sum((100 + i) % 2 == 0 for i in slice_ids) / 4
    assert bank["entries"][0]["execution_accuracy"] == pytest.approx(expected)
    assert prov["exec_slice"]["metric"] == "execution_accuracy"
    # the meta-prompt pairs are raw/induce rows, never raw/execute ones
    meta_prompts = [c for c in lm.contexts if c.endswith("The instruction was")]
    assert meta_prompts and all("Input: antonyms 1" in c or "Input: sum 1" in c for c in meta_prompts)
    assert "Output: out antonyms 1" in meta_prompts[0]
    # the bank is usable as any other
    layered = load_bank(tmp_path / "out")
    assert layered.entry("ape", "ii_sum", model="scripted").text == "write the output for the input."


def test_runner_plans_zero_shot_only_for_ii_tasks():
    profile = get_profile("quick")
    plan = build_plan(["ii_sum", "agnews"], ["null"], profile, load_bank())
    assert [v.setting_code for v in plan if v.task == "ii_sum"] == ["zs"]
    assert len([v for v in plan if v.task == "agnews"]) > 1
    (variant,) = [v for v in plan if v.task == "ii_sum"]
    meta = variant.protocol_metadata(profile, bank_dir=None, data_dir=None)
    assert meta["truncate_words"] is None and meta["perturbation"] is None and meta["test_sample"] is None


def test_sweep_over_ii_tasks_writes_execution_accuracy(ii_data_dir, tmp_path, ii):
    lm = ii.ScriptedLM(lambda context: " out " + context.rsplit("Input: ", 1)[1].split("\n")[0])
    lines = []
    report = run_sweep(model="scripted", model_args="pretrained=models/scripted", lm=lm, tasks="ii_antonyms,ii_sum",
                       methods="null,gold", profile="quick", data_dir=str(ii_data_dir), output=tmp_path,
                       progress=False, echo=lines.append)
    assert any("run zero-shot execution only" in line for line in lines)
    # quick profile: 2 gold instructions + null, zero-shot only, per task
    assert report.planned == 6 and report.evaluated == 6
    for path in report.result_files:
        results = json.loads(path.read_text())
        for name, values in results["results"].items():
            assert values["execution_accuracy,none"] == 1.0
            meta = results["configs"][name]["metadata"]
            assert meta["num_fewshot"] == 0 and meta["ii_task"] == source_name(name.split("__")[0])
            assert meta["eval_size"] == 3  # the whole raw/execute set, not the profile's test_sample (16)
