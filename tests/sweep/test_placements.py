"""``instructeval run --placements`` on InstructEval's own tasks: where the instruction goes (the
description in plain text, the system turn, the head of the first user turn), each placement its
own setting in the plan, the fingerprint and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from instructeval_aggregation.loading import load_runs
from instructeval_tasks.errors import UserError
from instructeval_tasks.options import OptionError
from instructeval_tasks.sweep import run_sweep

INSTRUCTION = "Solve the following task:"  # generic-0


def _first_context(out: Path, name: str) -> str:
    (path,) = sorted(out.rglob(f"samples_{name}_[0-9]*.jsonl"))
    return json.loads(path.read_text().splitlines()[0])["arguments"]["gen_args_0"]["arg_0"]


def _metadata(out: Path) -> dict[str, dict]:
    found = {}
    for path in sorted(out.rglob("results_*.json")):
        data = json.loads(path.read_text())
        found.update({name: config["metadata"] for name, config in data["configs"].items()})
    return found


@pytest.fixture(scope="module")
def placed(tiny_chat_model, tiny_data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("placements")
    common = dict(model="hf", model_args=f"pretrained={tiny_chat_model},dtype=float32", tasks="agnews",
                  methods="null,generic", profile="quick", data_dir=str(tiny_data_dir), device="cpu", progress=False,
                  overrides={"instructions_per_method": 1, "test_sample": 4, "settings": ("zero_shot", "few_shot"),
                             "n_selections": 1, "num_fewshot": 2})
    report = run_sweep(**common, output=out / "all", placements=("description", "chat-system", "chat-user"))
    plain = run_sweep(**common, output=out / "plain", dry_run=True)
    (generic,) = [(i, text) for _, method, i, _, text in report.plan["instructions"] if method == "generic"]
    return out / "all", report, plain, generic


def test_each_placement_is_its_own_variant_and_the_description_ones_are_unchanged(placed):
    out, report, plain, (gid, _) = placed
    names = set(report.plan["variants"])
    assert set(plain.plan["variants"]) <= names and len(names) == 3 * len(plain.plan["variants"])
    assert f"instructeval_agnews__{gid}__zs__chat-system" in names
    assert f"instructeval_agnews__{gid}__fs-d0__chat-user" in names
    meta = _metadata(out)
    zs = f"instructeval_agnews__{gid}__zs"
    assert "placement" not in meta[zs]  # the records and fingerprints of the plain prompt are as before
    assert meta[f"{zs}__chat-system"]["placement"] == "chat-system"
    assert meta[f"{zs}__chat-user"]["fewshot_as_multiturn"] is True
    fingerprints = {meta[f"{zs}{suffix}"]["variant_fingerprint"] for suffix in ("", "__chat-system", "__chat-user")}
    assert len(fingerprints) == 3


def test_the_instruction_goes_to_the_system_turn_or_the_head_of_the_first_user_turn(placed):
    out, _, _, (gid, text) = placed
    zs = f"instructeval_agnews__{gid}__zs"
    assert _first_context(out, zs).startswith(f"{text}\n\nNews: ")
    assert _first_context(out, f"{zs}__chat-system").startswith(f"<|system|>{text}<|end|>\n<|user|>News: ")
    assert _first_context(out, f"{zs}__chat-user").startswith(f"<|user|>{text}\n\nNews: ")
    # the null instruction: both chat placements are lm_eval --apply_chat_template on the stock prompt
    null = "instructeval_agnews__null__zs"
    assert _first_context(out, f"{null}__chat-system") == _first_context(out, f"{null}__chat-user")
    assert _first_context(out, f"{null}__chat-user").startswith("<|user|>News: ")
    # few-shot: the demos are user/assistant turns; chat-user puts the instruction before the first demo
    fs = _first_context(out, f"instructeval_agnews__{gid}__fs-d0__chat-user")
    assert fs.startswith(f"<|user|>{text}\n\nNews: ") and fs.count("<|assistant|>") == 3


def test_the_report_keeps_each_placement_apart(placed):
    out = placed[0]
    runs = load_runs([str(out)])
    assert not [i for i in runs.issues.items if i.level == "error"], runs.issues.items
    models = {v.model for v in runs.variants}
    assert models == {"tiny_chat", "tiny_chat@chat-system", "tiny_chat@chat-user"}


def test_a_chat_placement_needs_a_chat_template(tiny_model_dir, tiny_data_dir, tmp_path):
    with pytest.raises(UserError, match="need a chat template"):
        run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews", methods="generic",
                  profile="quick", overrides={"instructions_per_method": 1, "test_sample": 2, "settings": ("zero_shot",)},
                  data_dir=str(tiny_data_dir), device="cpu", progress=False, output=tmp_path,
                  placements=("description", "chat-system"))
    assert not list(tmp_path.rglob("results_*.json"))  # refused before anything ran


def test_unknown_placement_is_refused_with_a_suggestion(tiny_model_dir, tiny_data_dir, tmp_path):
    with pytest.raises(UserError, match="did you mean 'chat-system'"):
        run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir}", tasks="agnews", methods="generic", profile="quick",
                  data_dir=str(tiny_data_dir), output=tmp_path, placements=("chat-sytem",), dry_run=True)


def test_the_metadata_placement_must_agree_with_the_harness_flags(tiny_data_dir):
    from instructeval_tasks.task import base_task_config, task_from_config

    def task(placement: str):
        config = base_task_config("agnews")
        config["metadata"] = {"data_dir": str(tiny_data_dir), "test_sample": 2, "method": "generic",
                              "instruction_id": "generic-0", "placement": placement}
        return task_from_config(config)

    doc = task("chat-user").eval_docs[0]
    with pytest.raises(OptionError, match="placement=chat-user needs the model's chat template: add --apply_chat_template"):
        task("chat-user").fewshot_context(doc, 0)
    with pytest.raises(OptionError, match="placement=description is the plain-text prompt"):
        task("description").fewshot_context(doc, 0, apply_chat_template=True, chat_template=lambda m, **k: str(m))
    assert task("description").fewshot_context(doc, 0).startswith(INSTRUCTION)
