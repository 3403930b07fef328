"""The Natural Instructions tasks through the harness (``simple_evaluate``) with scripted LMs: the exact
prompt of each encoding, the generation settings, the benchmark's scores, the evaluated instances,
demonstrations from the positive examples, and the errors of a bad data folder or option."""

from __future__ import annotations

import json

import lm_eval
import pytest

import instructeval_tasks
from instructeval_banks import render_structured
from instructeval_tasks.errors import UserError
from instructeval_tasks.ni.prompt import render_header
from instructeval_tasks.ni.source import read_task_file


def evaluate(lm, tasks, metadata, **kwargs):
    tm = instructeval_tasks.task_manager(metadata=metadata)
    return lm_eval.simple_evaluate(model=lm, tasks=tasks, task_manager=tm, bootstrap_iters=0, verbosity="ERROR", **kwargs)


STANDARD = (
    "Definition: Say whether the sentence holds.\n\n"
    "Positive Example 1 -\nInput: Ice is cold.\nOutput: Yes\n\n"
    "Positive Example 2 -\nInput: Fire is wet.\nOutput: No\n\n"
)


def test_default_is_the_standard_encoding_and_its_prompt_is_pinned(ni_data_dir, ni):
    lm = ni.ScriptedLM(lambda c: "x")
    results = evaluate(lm, [ni.TOY_TASK], {"data_dir": str(ni_data_dir)})
    assert lm.contexts == [f"{STANDARD}Input: Claim {i}.\nOutput:" for i in range(3)]
    assert lm.gen_kwargs == [{"until": ["\n"], "max_gen_toks": 128, "do_sample": False}] * 3
    meta = results["configs"][ni.TOY_TASK]["metadata"]
    assert (meta["method"], meta["instruction_encoding"], meta["instruction_id"]) == (
        "ni_header", "definition_pos2", "ni_header-task190_snli_classification-definition_pos2")
    assert meta["ni_category"] == "Textual Entailment" and meta["eval_size"] == 3
    assert meta["data_source"].endswith("natural_instructions/tasks/task190_snli_classification.json")


ENCODED = {
    "definition": "Definition: Say whether the sentence holds.",
    "pos2": "Positive Example 1 -\nInput: Ice is cold.\nOutput: Yes\n\nPositive Example 2 -\nInput: Fire is wet.\nOutput: No",
    "definition_pos2_explanations": (
        "Definition: Say whether the sentence holds.\n\n"
        "Positive Example 1 -\nInput: Ice is cold.\nOutput: Yes\nExplanation: Ice is frozen water.\n\n"
        "Positive Example 2 -\nInput: Fire is wet.\nOutput: No\nExplanation: Fire is dry"
    ),
    "definition_pos2_neg2": STANDARD + "Negative Example 1 -\nInput: Rain is dry.\nOutput: Yes",
    "definition_pos2_neg2_explanations": (
        "Definition: Say whether the sentence holds.\n\n"
        "Positive Example 1 -\nInput: Ice is cold.\nOutput: Yes\nExplanation: Ice is frozen water.\n\n"
        "Positive Example 2 -\nInput: Fire is wet.\nOutput: No\nExplanation: Fire is dry\n\n"
        "Negative Example 1 -\nInput: Rain is dry.\nOutput: Yes\nExplanation: Rain is wet, so the answer is No."
    ),
    # the nine tasks' encodings: every example, with explanations; no Prompt in the file, so it is left out
    "prompt_definition_pos_examples": (
        "Definition: Say whether the sentence holds.\n\n"
        "Positive Example 1 -\nInput: Ice is cold.\nOutput: Yes\nExplanation: Ice is frozen water.\n\n"
        "Positive Example 2 -\nInput: Fire is wet.\nOutput: No\nExplanation: Fire is dry\n\n"
        "Positive Example 3 -\nInput: Snow is white.\nOutput: Yes\nExplanation: It is."
    ),
}


@pytest.mark.parametrize("encoding", sorted(ENCODED))
def test_each_encoding_renders_its_parts(ni_data_dir, ni, encoding):
    lm = ni.ScriptedLM(lambda c: "x")
    evaluate(lm, [ni.TOY_TASK], {"data_dir": str(ni_data_dir), "instruction_encoding": encoding}, limit=1)
    assert lm.contexts == [ENCODED[encoding] + "\n\nInput: Claim 0.\nOutput:"]


def test_the_nine_tasks_encodings_render_as_a_structured_bank_entry(ni_data_dir):
    """The layout is the structured bank's: the same file as a bank entry (with a Prompt, which the bank
    requires) renders identically once its Prompt section is removed."""
    tf = read_task_file("task190_snli_classification", str(ni_data_dir))
    entry = {"prompt": "P.", "definition": tf.definition,
             "positive_examples": [{"input": e["input"], "output": e["output"], "reason": e["explanation"]}
                                   for e in tf.positive_examples],
             "negative_examples": [{"input": e["input"], "output": e["output"], "reason": e["explanation"]}
                                   for e in tf.negative_examples]}
    for encoding in ("full", "pos_examples", "prompt_definition_pos_examples", "prompt_pos_examples"):
        bank = render_structured(entry, encoding).replace("Prompt: P.\n\n", "").replace("\n\nPrompt: P.", "")
        assert render_header(tf, encoding) == bank


def test_an_encoding_of_absent_parts_is_refused(ni_data_dir, ni):
    with pytest.raises(UserError, match=r"instruction_encoding=prompt_avoid: .*task190_snli_classification\.json "
                                        r"has none of its parts \(prompt, things_to_avoid\).*method null"):
        evaluate(ni.ScriptedLM(lambda c: "x"), [ni.TOY_TASK], {"data_dir": str(ni_data_dir),
                                                            "instruction_encoding": "prompt_avoid"})


def test_null_literal_and_generic_instructions(ni_data_dir, ni):
    for metadata, head in (({"method": "null"}, ""), ({"instruction": "Judge it."}, "Judge it.\n\n"),
                           ({"method": "generic", "instruction_index": 0}, "Solve the following task:\n\n")):
        lm = ni.ScriptedLM(lambda c: "x")
        evaluate(lm, [ni.TOY_TASK], {"data_dir": str(ni_data_dir), **metadata}, limit=1)
        assert lm.contexts == [f"{head}Input: Claim 0.\nOutput:"]


def test_scores_are_the_benchmarks_per_instance_maxima(ni_data_dir, ni):
    replies = {"Claim 0.": " yes 0\nInput: more",  # first line "yes 0": exact match with "Yes 0." -> 1, ROUGE 1
               "Claim 1.": " yep",                 # vs "yep 1": ROUGE P 1, R 1/2 -> 2/3; no exact match
               "Claim 2.": " no"}                  # nothing in common
    lm = ni.ScriptedLM(lambda c: replies[c.rsplit("Input: ", 1)[1].split("\n")[0]])
    results = evaluate(lm, [ni.TOY_TASK], {"data_dir": str(ni_data_dir)}, log_samples=True)
    r = results["results"][ni.TOY_TASK]
    assert r["exact_match,none"] == pytest.approx(1 / 3)
    assert r["rougeL,none"] == pytest.approx((1 + 2 / 3) / 3)
    samples = sorted(results["samples"][ni.TOY_TASK], key=lambda s: s["doc_id"])
    assert [s["exact_match"] for s in samples] == [1.0, 0.0, 0.0]


def test_multiline_outputs_stop_only_at_eos_and_are_scored_whole(tmp_path, ni):
    root = ni.write_task(tmp_path, ni.toy_task(1, multiline=True))
    lm = ni.ScriptedLM(lambda c: " line 0\nsecond 0")
    results = evaluate(lm, [ni.TOY_TASK], {"data_dir": str(root)})
    assert lm.gen_kwargs == [{"until": [], "max_gen_toks": 128, "do_sample": False}]
    assert results["results"][ni.TOY_TASK]["exact_match,none"] == 1.0
    assert results["configs"][ni.TOY_TASK]["metadata"]["ni_until"] == []


def test_only_the_first_100_instances_are_evaluated(tmp_path, ni):
    root = ni.write_task(tmp_path, ni.toy_task(103))
    lm = ni.ScriptedLM(lambda c: "x")
    results = evaluate(lm, [ni.TOY_TASK], {"data_dir": str(root), "method": "null"})
    assert lm.contexts == [f"Input: Claim {i}.\nOutput:" for i in range(100)]
    assert results["configs"][ni.TOY_TASK]["metadata"]["eval_size"] == 100


def test_demonstrations_come_from_the_positive_examples(ni_data_dir, ni):
    lm = ni.ScriptedLM(lambda c: "x")
    results = evaluate(lm, [ni.TOY_TASK], {"data_dir": str(ni_data_dir), "method": "null", "demo_seed": 1},
                       num_fewshot=2, limit=1)
    meta = results["configs"][ni.TOY_TASK]["metadata"]
    positives = {0: "Input: Ice is cold.\nOutput: Yes", 1: "Input: Fire is wet.\nOutput: No",
                 2: "Input: Snow is white.\nOutput: Yes"}
    assert len(meta["demo_ids"]) == 2 and meta["demo_source"] == "Positive Examples"
    demos = "".join(positives[i] + "\n\n" for i in meta["demo_ids"])
    assert lm.contexts == [demos + "Input: Claim 0.\nOutput:"]


def test_a_data_dir_that_is_the_clone_itself_names_the_fix(tmp_path, ni):
    clone = ni.write_task(tmp_path, ni.toy_task()) / "natural_instructions"
    with pytest.raises(UserError, match=r"is the clone itself: pass its parent as data_dir"):
        evaluate(ni.ScriptedLM(lambda c: "x"), [ni.TOY_TASK], {"data_dir": str(clone)})
    with pytest.raises(UserError, match=r"the data directory .*nope itself does not exist"):
        evaluate(ni.ScriptedLM(lambda c: "x"), [ni.TOY_TASK], {"data_dir": str(tmp_path / "nope")})


def test_a_malformed_task_file_names_the_file_and_field(tmp_path, ni):
    payload = ni.toy_task()
    payload["Instances"][1]["output"] = "Yes"  # a string, not a list of acceptable outputs
    root = ni.write_task(tmp_path, payload)
    with pytest.raises(UserError, match=r"task190_snli_classification\.json: Instances\[1\] must be an object "
                                        r"with a string input and output: a non-empty list of strings"):
        evaluate(ni.ScriptedLM(lambda c: "x"), [ni.TOY_TASK], {"data_dir": str(root)})


def test_protocol_knobs_without_meaning_are_refused(ni_data_dir, ni):
    for key, value in (("truncate_words", 50), ("perturbation", "mild_mix")):
        with pytest.raises(UserError, match=f"metadata {key} is not supported by the Natural Instructions tasks"):
            evaluate(ni.ScriptedLM(lambda c: "x"), [ni.TOY_TASK], {key: value, "data_dir": str(ni_data_dir)})


def test_the_group_runs_every_shipped_task(shared_data_dir, ni):
    from instructeval_tasks.ni.names import NI_IDS

    tasks = (shared_data_dir / "natural_instructions" / "tasks.txt").read_text().split()
    assert [f"ni_{t}" for t in tasks] == list(NI_IDS)
    for task in tasks:  # the categories table agrees with each file's Categories
        payload = json.loads((shared_data_dir / "natural_instructions" / "tasks" / f"{task}.json").read_text())
        assert read_task_file(task, str(shared_data_dir)).categories == tuple(payload["Categories"])
    lm = ni.ScriptedLM(lambda c: "x")
    results = evaluate(lm, ["instructeval_ni"], {"data_dir": str(shared_data_dir)}, limit=1)
    assert sorted(results["results"]) == sorted(f"instructeval_{name}" for name in NI_IDS)


def test_a_header_only_encoding_on_a_bank_entry_names_what_it_is_for():
    from instructeval_banks import BankError

    entry = {"prompt": "P.", "definition": "D.", "positive_examples": [{"input": "i", "output": "o", "reason": "r"}]}
    with pytest.raises(BankError, match=r"unknown instruction encoding 'definition_pos2' for a bank entry \(it renders "
                                        r"a Natural Instructions task file's own header"):
        render_structured(entry, "definition_pos2")


def test_task_lists_name_the_group():
    from instructeval_tasks.ni.names import NI_IDS
    from instructeval_tasks.specs import get_spec, resolve_task_names

    assert resolve_task_names("ni") == resolve_task_names("instructeval_ni") == list(NI_IDS)
    assert resolve_task_names("instructeval_ni_task190_snli_classification,ii_sum") == [
        "ni_task190_snli_classification", "ii_sum"]
    assert get_spec("instructeval_ni_task190_snli_classification").kind == "ni"


def test_a_recorded_header_id_selects_the_same_prompt_again(ni_data_dir, ni):
    first = ni.ScriptedLM(lambda c: "x")
    meta = evaluate(first, [ni.TOY_TASK], {"data_dir": str(ni_data_dir), "instruction_encoding": "definition"},
                    limit=1)["configs"][ni.TOY_TASK]["metadata"]
    again = ni.ScriptedLM(lambda c: "x")
    evaluate(again, [ni.TOY_TASK], {"data_dir": str(ni_data_dir), "method": meta["method"],
                                    "instruction_id": meta["instruction_id"]}, limit=1)
    assert again.contexts == first.contexts == ["Definition: Say whether the sentence holds.\n\nInput: Claim 0.\nOutput:"]
    for bad in ({"instruction_id": "ni_header-task190_snli_classification-definitions"},
                {"instruction_id": "ni_header-task190_snli_classification-definition", "instruction_encoding": "pos2"}):
        with pytest.raises(UserError, match=r"names no header of this task.*expected ni_header-task190_snli_classification-<encoding>"):
            evaluate(ni.ScriptedLM(lambda c: "x"), [ni.TOY_TASK], {"data_dir": str(ni_data_dir), "method": "ni_header", **bad})
    with pytest.raises(UserError, match=r"instruction_index has no meaning for the task's own header"):
        evaluate(ni.ScriptedLM(lambda c: "x"), [ni.TOY_TASK], {"data_dir": str(ni_data_dir), "instruction_index": 1})


def test_test_sample_draws_a_seeded_subset_of_the_instances(tmp_path, ni):
    import random

    root = ni.write_task(tmp_path, ni.toy_task(10))
    lm = ni.ScriptedLM(lambda c: "x")
    results = evaluate(lm, [ni.TOY_TASK], {"data_dir": str(root), "method": "null", "test_sample": 3, "test_seed": 4})
    ids = random.Random(4).sample(range(10), 3)
    assert lm.contexts == [f"Input: Claim {i}.\nOutput:" for i in ids]
    assert results["configs"][ni.TOY_TASK]["metadata"]["test_ids"] == ids


def test_demonstrations_never_repeat_the_headers_positive_examples(shared_data_dir):
    from instructeval_tasks.preview import build_task, render_prompt

    tf = read_task_file("task190_snli_classification", str(shared_data_dir))
    meta = {"data_dir": str(shared_data_dir)}
    prompt = render_prompt(build_task("ni_task190_snli_classification", meta, num_fewshot=3))[0]
    header_inputs = [e["input"].strip() for e in tf.positive_examples[:2]]
    for text in header_inputs:
        assert prompt.count(text) == 1  # in the header, not again as a demonstration
    assert sum(e["input"].strip() in prompt for e in tf.positive_examples[2:]) == 3  # drawn from the other four
    with pytest.raises(UserError, match=r"cannot draw 5 demonstrations from 4 positive examples \(those the header does not show\)"):
        render_prompt(build_task("ni_task190_snli_classification", meta, num_fewshot=5))


def test_an_encoding_whose_examples_the_file_lacks_is_refused_not_mislabelled(tmp_path, ni):
    payload = ni.toy_task(3)
    payload["Positive Examples"] = []
    root = ni.write_task(tmp_path, payload)
    with pytest.raises(UserError, match="has no Positive Examples, so this header would be the definition alone; choose that"):
        evaluate(ni.ScriptedLM(lambda c: "x"), [ni.TOY_TASK], {"data_dir": str(root), "instruction_encoding": "definition_pos2"})


def test_an_empty_gold_output_is_refused(tmp_path, ni):
    payload = ni.toy_task(3)
    payload["Instances"][1]["output"] = [""]
    root = ni.write_task(tmp_path, payload)
    with pytest.raises(UserError, match=r"Instances\[1\]\.output holds an empty answer"):
        evaluate(ni.ScriptedLM(lambda c: "x"), [ni.TOY_TASK], {"data_dir": str(root)})


def test_an_encoding_typo_names_the_closest_encoding(ni_data_dir, ni):
    with pytest.raises(UserError, match=r"metadata instruction_encoding='defintion': did you mean definition\? expected one of"):
        evaluate(ni.ScriptedLM(lambda c: "x"), [ni.TOY_TASK], {"data_dir": str(ni_data_dir), "instruction_encoding": "defintion"})
