"""``instructeval induce --method rlprompt`` end to end on the tiny offline model.

One module fixture trains on a copy of the tiny data whose EVAL rows are poison values, recording
every request the model receives; a second run is interrupted after a checkpoint and resumed.
"""

from __future__ import annotations

import json
import types

import pytest
import yaml

from instructeval_banks import check_bank_dir, load_bank_dir
from instructeval_tasks.induce.common import InduceError
from instructeval_tasks.induce.run import run_induce

KNOBS = {"steps": 4, "prompt_batch": 2, "inputs_per_step": 4, "n_exec": 4, "finalists": 3, "k": 2, "checkpoint_every": 2}


class _Interrupt(Exception):
    pass


@pytest.fixture(scope="module")
def trained(tmp_path_factory, poisoned_data, tiny_lm, tiny_model_args):
    root = tmp_path_factory.mktemp("rlprompt")
    data = poisoned_data.dir
    seen: list[list[tuple]] = []
    original = tiny_lm.loglikelihood

    def recording(requests, *args, **kwargs):
        seen.append([tuple(r.args) for r in requests])
        return original(requests, *args, **kwargs)

    tiny_lm.loglikelihood = recording
    try:
        common = dict(model="hf", model_args=tiny_model_args, tasks="agnews", data_dir=str(data), lm=tiny_lm,
                      progress=False)
        report = run_induce(method="rlprompt", output=root / "out", **common, **KNOBS)
    finally:
        del tiny_lm.loglikelihood
    return types.SimpleNamespace(root=root, data=data, poison=poisoned_data.marker, out=root / "out", report=report, calls=seen, common=common)


def _news(context: str) -> str:
    return context.split("News: ", 1)[1].split("\nCategory:")[0]


def test_training_and_ranking_read_only_train_rows(trained, tiny_rows):
    """Every request is a train row; training rows and the held-out slice are disjoint; the poisoned
    eval rows never reach the model. One loglikelihood call per step plus one for the finalists."""
    assert trained.poison not in json.dumps(trained.calls)
    rows = tiny_rows["ag_news"]["train"]
    data = yaml.safe_load(trained.report.written[0].read_text())
    held = data["provenance"]["heldout_slice"]["train_indices"]
    held_texts = {rows[i]["text"] for i in held}
    assert len(trained.calls) == KNOBS["steps"] + 1
    for call in trained.calls[:-1]:  # a step: 2 prompts x 4 inputs x 4 verbalizers, no held-out row
        assert len(call) == 2 * 4 * 4 and {c for _ctx, c in call} == {" World", " Sports", " Business", " Sci/Tech"}
        news = {_news(ctx) for ctx, _c in call}
        assert len(news) == 4 and not news & held_texts and news <= {r["text"] for r in rows}
    final = trained.calls[-1]
    assert {_news(ctx) for ctx, _c in final} == held_texts
    finalists = data["provenance"]["finalists"]
    assert len(final) == len(finalists) * 4 * 4
    # the prompts are the task's zero-shot prompt with the RLPrompt prompt as the instruction
    assert {ctx.split("\n\nNews: ")[0] for ctx, _c in final} == {f["text"].lstrip() for f in finalists}


def test_bank_validates_ranks_by_heldout_reward_and_matches_harness_accuracy(trained, tiny_lm, tiny_rows):
    from instructeval_tasks.induce.execution import execution_accuracy
    from instructeval_tasks.specs import get_spec

    label = trained.report.model_label
    path = trained.report.written[0]
    assert path == trained.out / "rlprompt" / label / "agnews.yaml"
    assert not path.with_name("agnews.checkpoint.pt").exists()  # removed once the bank is written
    timing = json.loads(path.with_name("agnews.timing.json").read_text())
    assert timing["steps"] == 4 and timing["train_seconds"] >= 0
    bank, errors = check_bank_dir(trained.out)
    assert errors == [] and bank is not None
    entries = load_bank_dir(trained.out).entries("rlprompt", "agnews", label)
    assert [e.id for e in entries] == [f"rlprompt-agnews-{label}-{i}" for i in range(2)]
    data = yaml.safe_load(path.read_text())
    prov = data["provenance"]
    finalists = prov["finalists"]
    assert 3 <= len(finalists) <= 4 and all(f["text"].strip() for f in finalists)
    expected = sorted(finalists, key=lambda f: -f["heldout_reward"])[:2]
    assert [e["text"] for e in data["entries"]] == [f["text"] for f in expected]
    assert all(len(e["token_ids"]) == 5 for e in data["entries"])
    assert prov["settings"]["steps"] == 4 and prov["settings"]["prompt_tokens"] == 5
    assert len(prov["reward_curve"]["segments"]) == 4
    # held-out accuracy = the harness's acc_per_token of the same instruction on the same rows
    rows = tiny_rows["ag_news"]["train"]
    held_rows = [rows[i] for i in prov["heldout_slice"]["train_indices"]]
    scores, metric = execution_accuracy(tiny_lm, get_spec("agnews"), [("rlprompt", e["text"]) for e in data["entries"]],
                                        held_rows, truncate_words=100, model_meta={"pretrained": prov["model_args"]["pretrained"]})
    assert metric == "acc_per_token"
    assert [e["heldout_accuracy"] for e in data["entries"]] == pytest.approx(scores)


def test_interrupted_run_resumes_from_its_checkpoint_to_the_same_bank(trained, tiny_lm, monkeypatch):
    """Deterministic for a seed: a run interrupted at step 3 resumes from the step-2 checkpoint and
    writes the bytes of the uninterrupted run."""
    from instructeval_tasks.induce import rlprompt_reward

    out = trained.root / "resumed"
    original = rlprompt_reward.ChoiceScorer.rewards
    calls = {"n": 0}

    def flaky(self, instructions, doc_ids):
        calls["n"] += 1
        if calls["n"] == 4:
            raise _Interrupt("stop at step 3")
        return original(self, instructions, doc_ids)

    monkeypatch.setattr(rlprompt_reward.ChoiceScorer, "rewards", flaky)
    with pytest.raises(_Interrupt):
        run_induce(method="rlprompt", output=out, **trained.common, **KNOBS)
    label = trained.report.model_label
    checkpoint = out / "rlprompt" / label / "agnews.checkpoint.pt"
    assert checkpoint.is_file() and not (out / "rlprompt" / label / "agnews.yaml").exists()
    monkeypatch.setattr(rlprompt_reward.ChoiceScorer, "rewards", original)
    lines = []
    resumed = run_induce(method="rlprompt", output=out, echo=lines.append, **trained.common, **KNOBS)
    assert resumed.written[0].read_bytes() == trained.report.written[0].read_bytes()
    timing = json.loads(resumed.written[0].with_name("agnews.timing.json").read_text())
    assert timing["resumed_from_step"] == 2 and not checkpoint.exists()
    # another seed trains another policy
    other = run_induce(method="rlprompt", output=trained.root / "seed1", **trained.common, **{**KNOBS, "seed": 1})
    assert other.written[0].read_bytes() != trained.report.written[0].read_bytes()


class _NoModel:
    def __getattr__(self, name):
        raise AssertionError(f"the model was used ({name})")


def test_generative_tasks_are_a_clear_error(trained, capsys):
    common = {**trained.common, "lm": _NoModel(), "tasks": "agnews,nq_open"}
    with pytest.raises(InduceError, match=r"nq_open is generative.*drop it from --tasks"):
        run_induce(method="rlprompt", output=trained.root / "gen", **common)
    assert not (trained.root / "gen").exists()
    from instructeval_tasks.cli import main

    argv = ["induce", "--method", "rlprompt", "--model", "hf", "--model-args", trained.common["model_args"],
            "--tasks", "triviaqa", "--data-dir", str(trained.data), "--output", str(trained.root / "gen"), "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "triviaqa is generative" in err and "Traceback" not in err
    assert err.startswith("instructeval: error: ") and len(err.strip().splitlines()) == 1


def test_cli_resume_needs_no_model_and_batch_size_is_the_prompt_batch(trained, capsys):
    from instructeval_tasks.cli import main

    argv = ["induce", "--method", "rlprompt", "--model", "hf", "--model-args", trained.common["model_args"],
            "--tasks", "agnews", "--data-dir", str(trained.data), "--output", str(trained.out), "--no-progress",
            "--steps", "4", "--batch-size", "2", "--inputs-per-step", "4", "--exec-items", "4", "--finalists", "3",
            "--k", "2", "--checkpoint-every", "2"]
    assert main(argv) == 0
    assert f"done  {trained.report.written[0]}" in capsys.readouterr().out
    assert main(argv[:-2] + ["--seed", "3"]) == 2  # other settings: refused, a user error
    assert "other settings" in capsys.readouterr().err


def test_sweep_with_bank_dir_uses_the_rlprompt_bank(trained, tmp_path, tiny_model_args):
    from instructeval_tasks.sweep import run_sweep

    report = run_sweep(output=tmp_path / "sweep", model="hf", model_args=tiny_model_args, tasks="agnews",
                       methods="rlprompt", bank_dir=str(trained.out), profile="quick", data_dir=str(trained.data),
                       dry_run=True, progress=False, overrides={"settings": ["zero_shot"], "test_sample": 4})
    assert report.planned == 2
    assert not (tmp_path / "sweep").exists()  # a dry run writes nothing; its plan comes back in the report
    plan = report.plan
    bank = yaml.safe_load(trained.report.written[0].read_text())
    assert [(m, eid, text) for _t, m, eid, _sha, text in plan["instructions"]] == [
        ("rlprompt", e["id"], e["text"]) for e in bank["entries"]]


def test_reward_contexts_are_the_tasks_own_zero_shot_prompts(tiny_data_dir, tiny_rows):
    """ChoiceScorer builds what fewshot_context builds for a task with the prompt as its instruction."""
    from instructeval_tasks.induce.common import make_task
    from instructeval_tasks.induce.rlprompt_reward import ChoiceScorer
    from instructeval_tasks.specs import get_spec

    for task in ("agnews", "boolq", "hellaswag"):
        spec = get_spec(task)
        view = make_task(spec, data_dir=tiny_data_dir, name=f"{spec.task_name}__ctx_view", truncate_words=100)
        doc = view.eval_docs[0]
        for text in (" ever los [cause ,", "Classify:\n", ""):
            task_obj = make_task(spec, data_dir=tiny_data_dir, name=f"{spec.task_name}__ctx_task", instruction=text,
                                 truncate_words=100)
            assert ChoiceScorer.context(text, view.doc_to_text(doc)) == task_obj.fewshot_context(doc, 0)
