"""``instructeval induce`` on the tiny offline model: SPELL ranking, APE, resume, and use in a sweep.

One module fixture runs both methods once, on a copy of the tiny data whose EVAL rows are poison
values, while recording every request the model receives.
"""

from __future__ import annotations

import json
import math
import re
import types
from pathlib import Path

import pytest
import yaml

from instructeval_banks import BankError, check_bank_dir, load_bank, load_bank_dir
from instructeval_tasks.induce.common import InduceError
from instructeval_tasks.induce.run import run_induce

PPL_KNOBS = {"candidates": "generic", "n_inputs": 3, "k": 3}
APE_KNOBS = {"n_demo_sets": 2, "n_demos": 3, "n_samples": 1, "max_gen_toks": 6, "n_exec": 4, "k": 2}


@pytest.fixture(scope="module")
def induced(tmp_path_factory, poisoned_data, tiny_lm, tiny_model_args):
    root = tmp_path_factory.mktemp("induce")
    data = poisoned_data.dir
    seen: list[tuple[str, tuple]] = []
    originals = {}
    for name in ("loglikelihood", "loglikelihood_rolling", "generate_until"):
        originals[name] = getattr(tiny_lm, name)

        def wrapper(requests, *args, _name=name, **kwargs):
            seen.append((_name, [tuple(r.args) for r in requests]))
            return originals[_name](requests, *args, **kwargs)

        setattr(tiny_lm, name, wrapper)
    try:
        common = dict(model="hf", model_args=tiny_model_args, tasks="agnews", output=root / "out", data_dir=str(data),
                      lm=tiny_lm, progress=False)
        ppl = run_induce(method="low_perplexity", **common, **PPL_KNOBS)
        ppl_calls = list(seen)
        ape = run_induce(method="ape", **common, **APE_KNOBS)
    finally:
        for name in originals:
            delattr(tiny_lm, name)
    return types.SimpleNamespace(root=root, data=data, poison=poisoned_data.marker, out=root / "out", ppl=ppl, ape=ape, calls=seen,
                                 ppl_calls=ppl_calls, common=common)


def _direct_perplexity(model_dir: Path, texts: list[str]) -> list[float]:
    """Token perplexity of each text with transformers: every token, the first after the BOS/EOS prefix."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    prefix = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    out = []
    with torch.no_grad():
        for text in texts:
            ids = tok(text)["input_ids"]
            logits = model(torch.tensor([[prefix] + ids])).logits[0, :-1].float()
            logp = torch.log_softmax(logits, -1)[torch.arange(len(ids)), torch.tensor(ids)]
            out.append(math.exp(-logp.sum().item() / len(ids)))
    return out


def test_low_perplexity_ranking_equals_a_direct_transformers_computation(induced, tiny_rows, tiny_model_dir):
    """mean_x exp(-LL/T) over the recorded train inputs, instruction tokens included, lowest k first."""
    path = induced.ppl.written[0]
    assert path == induced.out / "low_perplexity" / induced.ppl.model_label / "agnews.yaml"
    data = yaml.safe_load(path.read_text())
    rows = tiny_rows["ag_news"]["train"]
    ids = data["provenance"]["inputs"]["train_indices"]
    assert len(ids) == 3
    pool = load_bank().entries("generic", "agnews")
    direct = {}
    for entry in pool:
        ppls = _direct_perplexity(tiny_model_dir, [f"{entry.text}\n\nNews: {rows[i]['text']}\nCategory:" for i in ids])
        direct[entry.text] = sum(ppls) / len(ppls)
    expected = sorted(direct, key=direct.get)[:3]
    assert [e["text"] for e in data["entries"]] == expected
    for entry in data["entries"]:
        assert entry["perplexity"] == pytest.approx(direct[entry["text"]], rel=1e-4)
    assert [c["perplexity"] for c in data["provenance"]["candidate_pool"]] == pytest.approx(
        [direct[e.text] for e in pool], rel=1e-4)
    # one rolling request per (instruction, input) pair
    rolling = [args for name, batch in induced.ppl_calls if name == "loglikelihood_rolling" for args in batch]
    assert len(rolling) == len(pool) * len(ids)


def test_bank_files_validate_load_and_carry_provenance(induced):
    bank, errors = check_bank_dir(induced.out)
    assert errors == [] and bank is not None
    label = induced.ppl.model_label
    bank = load_bank_dir(induced.out)
    assert bank.models("low_perplexity", "agnews") == [label] and bank.models("ape", "agnews") == [label]
    lp = bank.entries("low_perplexity", "agnews", label)
    assert [e.id for e in lp] == [f"low_perplexity-agnews-{label}-{i}" for i in range(3)]
    assert all(e.model == label and e.extra["perplexity"] > 0 for e in lp)
    ppl = [e.extra["perplexity"] for e in lp]
    assert ppl == sorted(ppl)
    prov = yaml.safe_load((induced.out / "low_perplexity" / label / "agnews.yaml").read_text())["provenance"]
    assert prov["model"] == "hf" and prov["model_label"] == label and prov["data_source"].endswith("ag_news/train.jsonl")
    assert prov["settings"]["n_inputs"] == 3 and prov["settings"]["candidates"] == ["generic"]
    assert not re.search(r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}:\d{2}", json.dumps(prov))  # no timestamps


def test_ape_never_touches_the_eval_split_and_records_every_candidate(induced, tiny_rows):
    """Generation demos and execution-accuracy rows are train rows; the poisoned eval rows never reach the model."""
    everything = json.dumps([call for call in induced.calls])
    assert induced.poison not in everything
    data = yaml.safe_load(induced.ape.written[0].read_text())
    prov = data["provenance"]
    rows = tiny_rows["ag_news"]["train"]
    held = prov["exec_slice"]["train_indices"]
    demo_rows = {i for s in prov["demo_sets"] for i in s["train_indices"]}
    assert len(held) == 4 and not set(held) & demo_rows
    gen = [args for name, batch in induced.calls if name == "generate_until" for args in batch]
    assert len(gen) == 2 * 2  # 2 demo sets x (greedy + 1 sample)
    assert all(a[0].startswith("I gave a friend an instruction and three inputs.") for a in gen)
    assert all(a[0].endswith("\n\nThe instruction was") and a[1]["until"] == ["\n\n", "Input:"] for a in gen)
    assert {a[1]["do_sample"] for a in gen} == {False, True}
    for s in prov["demo_sets"]:
        prompt = next(a[0] for a in gen if all(f"Input: {rows[i]['text']}\n" in a[0] for i in s["train_indices"]))
        assert prompt.count("\nInput: ") == 3
    # execution accuracy is scored on exactly the held-out train rows
    scored = [args for name, batch in induced.calls if name == "loglikelihood" for args in batch]
    news = {ctx.split("News: ", 1)[1].split("\nCategory:")[0] for ctx, _cont in scored}
    assert news == {rows[i]["text"] for i in held}
    assert prov["exec_slice"]["metric"] == "acc_per_token"
    cands = prov["candidates"]
    assert [(c["demo_set"], c["decoding"], c["sample"]) for c in cands] == [
        (0, "greedy", None), (0, "sampled", 0), (1, "greedy", None), (1, "sampled", 0)]
    kept = [c for c in cands if c["dropped"] is None]
    assert kept and all(c["execution_accuracy"] in (0.0, 0.25, 0.5, 0.75, 1.0) for c in kept)
    assert all(c["execution_accuracy"] is None for c in cands if c["dropped"])
    entries = data["entries"]
    assert [e["execution_accuracy"] for e in entries] == sorted((e["execution_accuracy"] for e in entries), reverse=True)
    assert entries[0]["execution_accuracy"] == max(c["execution_accuracy"] for c in kept)
    assert data["model"] == induced.ape.model_label


class _NoModel:
    def __getattr__(self, name):
        raise AssertionError(f"the model was used ({name}) although every task was finished")


def test_resume_skips_finished_tasks_and_reruns_are_byte_identical(induced, tmp_path, tiny_lm):
    path = induced.ppl.written[0]
    before = path.read_bytes(), path.stat().st_mtime_ns
    common = {**induced.common, "lm": _NoModel()}
    report = run_induce(method="low_perplexity", **common, **PPL_KNOBS)
    assert report.written == [] and report.skipped == [path]
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    with pytest.raises(InduceError, match="other settings"):
        run_induce(method="low_perplexity", **common, **{**PPL_KNOBS, "n_inputs": 2})
    # same computation elsewhere: the same bytes (no dates, stable order and rounding)
    again = run_induce(method="low_perplexity", **{**induced.common, "output": tmp_path / "again"}, **PPL_KNOBS)
    assert again.written[0].read_bytes() == before[0]
    # a broken file is recomputed
    again.written[0].write_text("method: [broken\n")
    fixed = run_induce(method="low_perplexity", **{**induced.common, "output": tmp_path / "again"}, **PPL_KNOBS)
    assert fixed.written == again.written and fixed.written[0].read_bytes() == before[0]


def test_cli_resume_needs_no_model(induced, capsys):
    """`instructeval induce` with the settings of a finished run skips every task (no model load)."""
    from instructeval_tasks.cli import main

    argv = ["induce", "--method", "ape", "--model", "hf", "--model-args", induced.common["model_args"],
            "--tasks", "agnews", "--data-dir", str(induced.data), "--output", str(induced.out), "--no-progress",
            "--demo-sets", "2", "--demos", "3", "--samples", "1", "--max-gen-toks", "6", "--exec-items", "4", "--k", "2"]
    assert main(argv) == 0
    assert f"done  {induced.ape.written[0]}" in capsys.readouterr().out
    assert main(argv[:-2] + ["--k", "3"]) == 2  # other settings: refused, a user error
    err = capsys.readouterr().err
    assert "other settings" in err and err.startswith("instructeval: error: ") and len(err.strip().splitlines()) == 1


def test_sweep_with_bank_dir_uses_the_induced_per_model_banks(induced, tmp_path, tiny_model_args):
    """The runner layers --bank-dir over the shipped banks, finds the model label's banks, and the task
    resolves the same entries by id."""
    from instructeval_tasks.preview import build_task
    from instructeval_tasks.sweep import run_sweep

    label = induced.ppl.model_label
    common = dict(model="hf", model_args=tiny_model_args, tasks="agnews", methods="null,low_perplexity,ape",
                  bank_dir=str(induced.out), profile="quick", data_dir=str(induced.data), dry_run=True, progress=False,
                  overrides={"instructions_per_method": 1, "test_sample": 4, "settings": ["zero_shot", "few_shot"]})
    report = run_sweep(output=tmp_path / "sweep", **common)
    assert report.planned == 3 * (1 + 2)
    assert not (tmp_path / "sweep").exists()  # a dry run writes nothing; the report carries the plan
    plan = report.plan
    methods = {method: (eid, text) for _task, method, eid, _sha, text in plan["instructions"]}
    assert set(methods) == {"null", "low_perplexity", "ape"}
    assert methods["low_perplexity"][0].startswith(f"low_perplexity-agnews-{label}-")
    assert methods["ape"][0].startswith(f"ape-agnews-{label}-")
    for method, (eid, text) in methods.items():
        task = build_task("agnews", {"data_dir": str(induced.data), "bank_dir": plan["bank_dir"], "method": method,
                                     "instruction_id": eid}, 0)
        assert (task.instruction.method, task.instruction.entry_id, task.instruction.text) == (method, eid, text)
    with pytest.raises(BankError, match="no bank for model 'other-model'"):
        run_sweep(output=tmp_path / "sweep2", model_label="other-model", **common)


def test_execution_accuracy_of_any_bank_entry(induced, tiny_rows):
    """--method execution_accuracy scores bank entries on the same held-out slice as APE: an induced APE
    entry gets back the score recorded in its bank."""
    common = {**induced.common, "output": induced.root / "exec"}
    ape_bank = yaml.safe_load(induced.ape.written[0].read_text())
    report = run_induce(method="execution_accuracy", **common, candidates="ape,generic", bank_dir=str(induced.out), n_exec=4)
    path = report.written[0]
    assert path == induced.root / "exec" / "execution_accuracy" / induced.ape.model_label / "agnews.json"
    data = json.loads(path.read_text())
    assert data["metric"] == "acc_per_token" and data["settings"]["n_exec"] == 4
    assert data["exec_slice"]["train_indices"] == ape_bank["provenance"]["exec_slice"]["train_indices"]
    scores = {e["id"]: e["execution_accuracy"] for e in data["entries"]}
    assert list(scores)[: len(ape_bank["entries"])] == [e["id"] for e in ape_bank["entries"]]
    for entry in ape_bank["entries"]:
        assert scores[entry["id"]] == entry["execution_accuracy"]
    assert {e["method"] for e in data["entries"]} == {"ape", "generic"} and len(scores) == len(ape_bank["entries"]) + 5
    assert all(v * 4 == int(v * 4) for v in scores.values())
