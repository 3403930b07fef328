"""The ad hoc bank (40 hand-written instructions per task) and the paraphrase generator (stub LMs)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from instructeval_banks import load_bank, load_bank_dir, normalize_text, parse_bank_file
from instructeval_banks import adhoc_generate as ag

REPO = Path(__file__).resolve().parents[2]
TASKS = ["agnews", "anli", "boolq", "imdb", "emotion", "cosmosqa", "hellaswag", "nq_open", "triviaqa"]
PROVENANCE = "written by the instructeval-harness maintainers as paraphrases of PromptSource-style instructions"


# ------------------------------------------------------------------------------ shipped bank

@pytest.mark.parametrize("task", TASKS)
def test_shipped_adhoc_bank(task):
    path = REPO / "instruction_banks" / "adhoc" / f"{task}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["method"] == "adhoc" and data["tasks"] == [task]
    assert data["provenance"]["source"] == PROVENANCE
    entries = parse_bank_file(path)
    assert len(entries) == 40
    assert [e.id for e in entries] == [f"adhoc-{task}-{i:02d}" for i in range(40)]
    texts = [e.text for e in entries]
    assert len({normalize_text(t) for t in texts}) == 40
    for text in texts:
        assert text == text.strip() and 10 <= len(text) <= 200
        assert not any(c in text for c in "{}[]<>|"), text
        assert text[-1] in ".?:", text


def test_adhoc_instructions_are_task_specific():
    bank = load_bank()
    seen: dict[str, str] = {}
    for task in TASKS:
        for entry in bank.entries("adhoc", task):
            key = normalize_text(entry.text)
            assert key not in seen, (task, entry.text, seen.get(key))
            seen[key] = task
    assert {normalize_text(e.text) for e in bank.entries("generic", "agnews")}.isdisjoint(seen)


def test_adhoc_does_not_copy_the_original_banks(upstream_dir):
    original = set()
    for path in upstream_dir.rglob("*.yaml"):
        original |= {normalize_text(t) for t in yaml.safe_load(path.read_text(encoding="utf-8"))}
    ours = {normalize_text(e.text) for t in TASKS for e in load_bank().entries("adhoc", t)}
    assert ours.isdisjoint(original)


# ------------------------------------------------------------------------------ generator

class StubLM:
    """Implements ``generate_until`` only; answers from a queue, records the requests."""

    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.requests = []

    def generate_until(self, requests, disable_tqdm: bool = False):
        self.requests.extend(requests)
        return [self.outputs[i % len(self.outputs)] for i in range(len(requests))]


SEEDS = ["What label best describes this news article?", "Which section of a newspaper would this article appear in?"]


def test_requests_use_the_paraphrase_meta_prompt():
    lm = StubLM(["x"])
    ag.generate_pool(lm, SEEDS, task="agnews", n=5, meta_prompts=ag.META_PROMPTS[:2], samples_per_prompt=2)
    assert len(lm.requests) == 2 * 2 * 2
    context, kwargs = lm.requests[0].args
    assert context.startswith("Paraphrase the following instruction.")
    assert "Instruction: What label best describes this news article?\nParaphrase:" in context
    assert kwargs == {"until": ["\n"], "max_gen_toks": 64, "do_sample": False}
    assert "AG News" in lm.requests[2].args[0]  # the second meta-prompt names the task
    assert [r.idx for r in lm.requests] == list(range(8))


def test_cleaning_validation_and_dedup():
    outputs = [
        ' "Which category does this news story belong to?"\nExtra line',  # quotes, extra line
        "1. Which category does this news story belong to?",  # duplicate after cleaning
        "Paraphrase: What is the topic of this news article?",  # label removed
        "what label best describes this NEWS article?",  # same as a seed
        "Ok.",  # too short
        "Classify {text} into a topic.",  # placeholder
        "Sort {{ text }} by topic.",  # template syntax
        "x " * 200,  # too long
        "- In which newspaper section would this story appear?",
    ]
    lm = StubLM(outputs)
    result = ag.generate_pool(lm, SEEDS[:1], task="agnews", n=10, meta_prompts=["P {seed} {task_title}"], samples_per_prompt=len(outputs))
    assert result.accepted == [
        "Which category does this news story belong to?",
        "What is the topic of this news article?",
        "In which newspaper section would this story appear?",
    ]
    assert result.rejections == {"duplicate": 1, "placeholder": 2, "same_as_seed": 1, "too_long": 1, "too_short": 1}


def test_stops_at_n():
    lm = StubLM([f"Decide which topic fits news item number {i}." for i in range(10)])
    result = ag.generate_pool(lm, SEEDS, task="agnews", n=3, meta_prompts=["{seed}"], samples_per_prompt=5)
    assert len(result.accepted) == 3 and result.rejections["over_n"] == 7


def test_bank_file_from_a_stub_run(tmp_path):
    lm = StubLM([f"Paraphrase number {w} of the news instruction." for w in ("one", "two", "three", "four")])
    result = ag.generate_pool(lm, SEEDS, task="agnews", n=4, samples_per_prompt=1, meta_prompts=ag.META_PROMPTS[:2])
    text = ag.bank_file_text(result, model="stub", model_args="pretrained=none", seed_source="test seeds", command="pytest")
    path = tmp_path / "bank" / "adhoc_agnews.yaml"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    entries = parse_bank_file(path)
    assert [e.id for e in entries] == [f"adhoc-agnews-{i:02d}" for i in range(4)]
    assert [e.text for e in entries] == result.accepted
    provenance = yaml.safe_load(text)["provenance"]
    assert provenance["model"] == "stub" and provenance["model_args"] == "pretrained=none"
    assert provenance["seeds"] == SEEDS and provenance["meta_prompts"] == list(ag.META_PROMPTS[:2])
    assert provenance["gen_kwargs"] == ag.DEFAULT_GEN_KWARGS and provenance["requests"] == 4
    assert provenance["accepted"] == 4 and provenance["rejections"] == {}
    assert load_bank_dir(path.parent).entry("adhoc", "agnews", index=3).text == result.accepted[3]


def test_the_harness_dummy_model_gives_nothing_usable(tmp_path):
    from lm_eval.api.registry import get_model

    lm = get_model("dummy").create_from_arg_string("", {})
    result = ag.generate_pool(lm, SEEDS, task="agnews", n=5)
    assert result.accepted == [] and result.rejections == {"too_short": len(SEEDS) * len(ag.META_PROMPTS)}
    with pytest.raises(ValueError, match="no valid paraphrase"):
        ag.bank_file_text(result, model="dummy")
    out = tmp_path / "out.yaml"
    assert ag.main(["--model", "dummy", "--task", "agnews", "--n", "5", "--out", str(out)]) == 1
    assert not out.exists()


def test_main_with_a_registered_stub_model(tmp_path, monkeypatch):
    from lm_eval.api import registry

    class Factory:
        @staticmethod
        def create_from_arg_string(arg_string, additional_config=None):
            return StubLM([f"Rewrite {i}: classify this news text by its topic." for i in range(100)])

    monkeypatch.setattr(registry, "get_model", lambda name: Factory)
    out = tmp_path / "gen.yaml"
    code = ag.main(["--model", "stub", "--model_args", "a=1", "--task", "imdb", "--n", "6", "--out", str(out)])
    assert code == 0
    entries = parse_bank_file(out)
    assert len(entries) == 6 and entries[0].id == "adhoc-imdb-00"
    provenance = yaml.safe_load(out.read_text())["provenance"]
    assert provenance["seeds"] == [e.text for e in load_bank().entries("promptsource", "imdb")]
    assert "promptsource" in provenance["seed_source"]
