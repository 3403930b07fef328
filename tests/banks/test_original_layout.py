"""The original InstructEval layout (``../shared/reference/upstream_banks``) loads as is.

Counts from ``upstream_banks/README.md``: 169 files, 809 strings; 9 tasks x (null 1, generic 5,
manual 5, chat_gpt 5, ape 5), rlprompt 5 for 7 tasks, low perplexity 5 for each of 13 models.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from instructeval_banks import METHOD_DIRS, TASK_STEMS, load_bank, load_bank_dir

TASKS = ["agnews", "anli", "boolq", "imdb", "emotion", "cosmosqa", "hellaswag", "nq_open", "triviaqa"]
MODELS = ["bloom1b1", "bloom1b7", "bloom3b", "bloom7b1", "gptneo1b3", "gptneo2b7", "gptneox20b",
          "llama13b", "llama7b", "opt13b", "opt1b3", "opt2b7", "opt6b7"]
GENERIC = ["Solve the following task:", "Find the answer below:", "Complete the problem.",
           "Find the best solution to the question below:", "Complete the question below:"]
LOW_PPL_DISTINCT = {"agnews": 9, "anli": 14, "boolq": 13, "imdb": 18, "emotion": 13, "cosmosqa": 13,
                    "hellaswag": 14, "nq_open": 15, "triviaqa": 9}


@pytest.fixture(scope="module")
def upstream(upstream_dir):
    return load_bank_dir(upstream_dir)


def test_methods_tasks_and_totals(upstream):
    assert upstream.methods() == ["null", "generic", "promptsource", "adhoc", "low_perplexity", "ape", "rlprompt"]
    assert upstream.tasks() == TASKS
    assert len(upstream.entries_by_key) == 169
    assert sum(len(v) for v in upstream.entries_by_key.values()) == 809


@pytest.mark.parametrize("task", TASKS)
def test_model_agnostic_counts(upstream, task):
    assert [e.text for e in upstream.entries("null", task)] == [""]
    assert [e.text for e in upstream.entries("generic", task)] == GENERIC
    for method in ("promptsource", "adhoc", "ape"):
        assert len(upstream.entries(method, task)) == 5, method
    if task in ("nq_open", "triviaqa"):
        assert "rlprompt" not in upstream.methods(task)
    else:
        assert len(upstream.entries("rlprompt", task)) == 5


@pytest.mark.parametrize("task", TASKS)
def test_low_perplexity_is_per_model(upstream, task):
    assert upstream.models("low_perplexity", task) == MODELS
    distinct = set()
    for model in MODELS:
        entries = upstream.entries("low_perplexity", task, model)
        assert len(entries) == 5 and all(e.model == model for e in entries)
        distinct |= {e.text for e in entries}
    assert len(distinct) == LOW_PPL_DISTINCT[task]
    with pytest.raises(Exception, match="model-specific"):
        upstream.entries("low_perplexity", task)


def test_ids_positions_and_provenance(upstream, upstream_dir):
    entry = upstream.entry("ape", "cosmosqa", index=2)
    assert entry.id == "orig-ape-cosmosqa-2" and entry.index == 2
    assert entry.extra == {"original_path": "ape/cosmos_qa.yaml", "original_index": 2}
    assert entry.text == yaml.safe_load((upstream_dir / "ape" / "cosmos_qa.yaml").read_text())[2]
    lp = upstream.entries("low_perplexity", "emotion", "opt1b3")
    assert [e.id for e in lp] == [f"orig-low_perplexity-emotion-opt1b3-{i}" for i in range(5)]
    assert lp[0].extra["original_path"] == "low_perplexity_prompts/opt1b3/tweet_emotion.yaml"
    # an id finds a per-model entry without naming the model
    assert upstream.entry("low_perplexity", "emotion", entry_id="orig-low_perplexity-emotion-opt1b3-3") == lp[3]
    assert upstream.entry("null", "agnews").id == "orig-null-agnews-0"


def test_every_string_matches_the_file_in_order(upstream, upstream_dir):
    for path in sorted(upstream_dir.rglob("*.yaml")):
        rel = path.relative_to(upstream_dir).parts
        method = METHOD_DIRS[rel[0]]
        model = rel[1] if len(rel) == 3 else None
        task = TASK_STEMS[path.stem]
        texts = [e.text for e in upstream.entries(method, task, model)]
        assert texts == yaml.safe_load(path.read_text(encoding="utf-8")), path


def test_ape_leading_whitespace_is_kept(upstream):
    hellaswag = [e.text for e in upstream.entries("ape", "hellaswag")]
    assert hellaswag[0].startswith(":\n\nPick a ripe avocado.")
    assert hellaswag[1].startswith(" fill a 3/4 full tank")
    assert " use Google to find the answer to the question." in [e.text for e in upstream.entries("ape", "triviaqa")]


def test_a_single_method_folder_is_a_bank_dir(upstream_dir):
    ape = load_bank_dir(upstream_dir / "ape")
    assert ape.methods() == ["ape"] and len(ape.tasks()) == 9
    assert ape.entry("ape", "agnews").id == "orig-ape-agnews-0"
    lp = load_bank_dir(upstream_dir / "low_perplexity_prompts")
    assert lp.methods() == ["low_perplexity"] and lp.models("low_perplexity", "boolq") == MODELS
    assert lp.entries("low_perplexity", "boolq", "opt13b")[0].extra["original_path"] == "low_perplexity_prompts/opt13b/boolq.yaml"


def test_unknown_directory_names_become_methods(tmp_path):
    (tmp_path / "my_method").mkdir()
    (tmp_path / "my_method" / "ag_news.yaml").write_text('- "Classify."\n')
    (tmp_path / "Other-Method").mkdir()
    (tmp_path / "Other-Method" / "imdb.yaml").write_text("- Rate it.\n")
    (tmp_path / "Other-Method" / "agnews.yaml").write_text("- Task id as stem.\n")
    bank = load_bank_dir(tmp_path)
    assert bank.entry("my_method", "agnews").id == "orig-my_method-agnews-0"
    assert bank.entry("other_method", "imdb").text == "Rate it."
    assert bank.entry("other_method", "agnews").text == "Task id as stem."


def test_task_metadata_bank_dir_uses_the_original_layout(upstream_dir):
    from instructeval_tasks.instruction import resolve_instruction
    from instructeval_tasks.options import TaskOptions
    from instructeval_tasks.specs import TASK_SPECS

    options = TaskOptions.from_metadata({"bank_dir": str(upstream_dir), "method": "ape", "instruction_index": 1})
    instruction = resolve_instruction(options, TASK_SPECS["hellaswag"])
    assert instruction.entry_id == "orig-ape-hellaswag-1"
    assert instruction.text.startswith(" fill")  # kept in the record ...
    assert instruction.description.startswith("fill a 3/4 full tank")  # ... stripped in the prompt
    options = TaskOptions.from_metadata(
        {"bank_dir": str(upstream_dir), "method": "low_perplexity", "instruction_id": "orig-low_perplexity-agnews-llama7b-4"}
    )
    instruction = resolve_instruction(options, TASK_SPECS["agnews"])
    assert instruction.text == load_bank(upstream_dir).entries("low_perplexity", "agnews", "llama7b")[4].text
    assert instruction.record()["instruction_encoding"] is None


def test_shipped_banks_are_native_and_unaffected():
    bank = load_bank()
    assert bank.entry("null", "agnews").id == "null"
    assert Path(bank.entries("generic", "imdb")[0].source_file).name == "generic.yaml"
