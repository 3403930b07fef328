"""The Instruction Induction tasks through the harness (``simple_evaluate``) with scripted LMs:
exact prompts (zero-shot, null, literal, few-shot), generation settings, scoring of every task,
data errors and the recorded protocol."""

from __future__ import annotations

import random

import lm_eval
import pytest

import instructeval_tasks
from instructeval_banks import load_bank
from instructeval_tasks.errors import UserError
from instructeval_tasks.ii.names import II_IDS, INDUCTION_TASKS
from instructeval_tasks.ii.examples import build_rows



def evaluate(lm, tasks, metadata, **kwargs):
    tm = instructeval_tasks.task_manager(metadata=metadata)
    return lm_eval.simple_evaluate(model=lm, tasks=tasks, task_manager=tm, bootstrap_iters=0,
                                   verbosity="ERROR", **kwargs)


def gold_answers(task_examples) -> dict[str, str]:
    out = {}
    for task in INDUCTION_TASKS:
        examples = [(str(i + 1), e) for i, e in enumerate(task_examples(task, "execute"))]
        for row in build_rows(task, examples, task):
            out[row["input"]] = row["answers"][0]
    return out


def test_oracle_scores_one_on_all_24_tasks_and_noise_scores_zero(ii_data_dir, ii):
    ScriptedLM = ii.ScriptedLM
    lm = ScriptedLM(ii.oracle(gold_answers(ii.task_examples)))
    results = evaluate(lm, ["instructeval_ii"], {"method": "gold", "data_dir": str(ii_data_dir)})["results"]
    assert sorted(results) == sorted(f"instructeval_{name}" for name in II_IDS)
    assert {name: r["execution_accuracy,none"] for name, r in results.items()} == {name: 1.0 for name in results}
    # greedy, 30 tokens (the original's max_tokens), no stop sequence but EOS (added by the backend)
    assert all(k == {"until": [], "max_gen_toks": 30, "do_sample": False} for k in lm.gen_kwargs)
    # cause_and_effect: 3 examples -> 6 rows, both orders
    assert sum("Input: Sentence 1: Cause 0. Sentence 2: Effect 0.\n" in c or
               "Input: Sentence 1: Effect 0. Sentence 2: Cause 0.\n" in c for c in lm.contexts) == 2

    wrong = ScriptedLM(lambda context: " something else entirely")
    results = evaluate(wrong, ["instructeval_ii"], {"method": "gold", "data_dir": str(ii_data_dir)})["results"]
    assert {r["execution_accuracy,none"] for r in results.values()} == {0.0}


def test_partial_credit_follows_the_task_metric(ii_data_dir, ii):
    ScriptedLM = ii.ScriptedLM
    # common_concept is scored with F1: "share trait" vs "share trait 0." -> P = 1, R = 2/3, F1 = 0.8;
    # synonyms with contains: the answer inside a sentence counts.
    def reply(context):
        if "Input: thing " in context:
            return " share trait"
        return " I'd say " + context.rsplit("Input: ", 1)[1].split("\n")[0].replace("synonyms", "out synonyms") + " here"

    lm = ScriptedLM(reply)
    results = evaluate(lm, ["instructeval_ii_common_concept", "instructeval_ii_synonyms"],
                       {"method": "gold", "data_dir": str(ii_data_dir)})["results"]
    assert results["instructeval_ii_common_concept"]["execution_accuracy,none"] == pytest.approx(0.8)
    assert results["instructeval_ii_synonyms"]["execution_accuracy,none"] == 1.0


def test_zero_shot_prompt_is_the_originals(ii_data_dir, ii):
    ScriptedLM = ii.ScriptedLM
    lm = ScriptedLM(lambda c: "x")
    results = evaluate(lm, ["instructeval_ii_antonyms"], {"method": "gold", "instruction_index": 2,
                                                           "data_dir": str(ii_data_dir)})
    gold = load_bank().entry("gold", "ii_antonyms", index=2).text
    assert gold == "Write a word that means the opposite of the input"
    assert lm.contexts == [f"Instruction: {gold}\nInput: antonyms {i}\nOutput:" for i in range(3)]
    meta = results["configs"]["instructeval_ii_antonyms"]["metadata"]
    assert meta["instruction_id"] == "gold-ii_antonyms-2" and meta["instruction_text"] == gold
    assert meta["ii_task"] == "antonyms" and meta["ii_metric"] == "em"
    assert meta["data_source"].endswith("instruction_induction/raw/execute/antonyms.json")
    assert meta["demo_source"] is None  # zero-shot: raw/induce never read


def test_null_and_literal_instructions(ii_data_dir, ii):
    ScriptedLM = ii.ScriptedLM
    lm = ScriptedLM(lambda c: "x")
    evaluate(lm, ["instructeval_ii_sum"], {"method": "null", "data_dir": str(ii_data_dir)}, limit=1)
    assert lm.contexts == ["Input: sum 0\nOutput:"]
    lm = ScriptedLM(lambda c: "x")
    literal = " Add {{ x }} up. "  # verbatim: leading/trailing spaces kept, never rendered
    evaluate(lm, ["instructeval_ii_sum"], {"instruction": literal, "data_dir": str(ii_data_dir)}, limit=1)
    assert lm.contexts == ["Instruction:  Add {{ x }} up. \nInput: sum 0\nOutput:"]


def test_few_shot_demos_from_raw_induce_in_the_same_format(ii_data_dir, ii):
    ScriptedLM = ii.ScriptedLM
    lm = ScriptedLM(lambda c: "x")
    results = evaluate(lm, ["instructeval_ii_larger_animal"],
                       {"method": "gold", "demo_seed": 3, "data_dir": str(ii_data_dir)}, num_fewshot=2)
    ids = random.Random(3).sample(range(6), 2)  # uniform draw from the 6 induce rows, demo_seed 3
    demos = "".join(f"Input: larger animal {100 + i}\nOutput: out larger animal {100 + i}\n\n" for i in ids)
    gold = load_bank().entry("gold", "ii_larger_animal", index=0).text
    assert lm.contexts == [f"Instruction: {gold}\n{demos}Input: larger animal {j}\nOutput:" for j in range(3)]
    meta = results["configs"]["instructeval_ii_larger_animal"]["metadata"]
    assert meta["demo_ids"] == ids and meta["num_fewshot"] == 2 and meta["setting"] == "few_shot"
    assert meta["demo_source"].endswith("instruction_induction/raw/induce/larger_animal.json")


def test_execute_only_folder_runs_zero_shot_and_names_the_missing_induce_file(tmp_path, ii):
    ScriptedLM = ii.ScriptedLM
    root = ii.write_raw_dir(tmp_path, tasks=("sum",), splits=("execute",))
    lm = ScriptedLM(lambda c: " 0")
    evaluate(lm, ["instructeval_ii_sum"], {"method": "gold", "data_dir": str(root)})
    with pytest.raises(UserError, match=r"no induce file at .*instruction_induction/raw/induce/sum\.json"):
        evaluate(ScriptedLM(lambda c: " 0"), ["instructeval_ii_sum"], {"method": "gold", "data_dir": str(root)},
                 num_fewshot=1)


def test_missing_execute_file_is_an_error_naming_the_path(tmp_path, ii):
    ScriptedLM = ii.ScriptedLM
    with pytest.raises(UserError) as info:
        evaluate(ScriptedLM(lambda c: ""), ["instructeval_ii_sum"], {"method": "gold", "data_dir": str(tmp_path / "nope")})
    message = str(info.value)
    assert f"{tmp_path / 'nope'}/instruction_induction/raw/execute/sum.json" in message
    assert "does not exist" in message


def test_protocol_knobs_without_meaning_are_refused(ii_data_dir, ii):
    ScriptedLM = ii.ScriptedLM
    for key, value in (("truncate_words", 50), ("perturbation", "mild_mix")):
        with pytest.raises(UserError, match=f"metadata {key} is not supported"):
            evaluate(ScriptedLM(lambda c: ""), ["instructeval_ii_sum"], {key: value, "data_dir": str(ii_data_dir)})


def test_test_sample_draws_a_seeded_subset(ii_data_dir, ii):
    ScriptedLM = ii.ScriptedLM
    lm = ScriptedLM(lambda c: "x")
    results = evaluate(lm, ["instructeval_ii_diff"], {"test_sample": 2, "test_seed": 5, "data_dir": str(ii_data_dir)})
    ids = random.Random(5).sample(range(3), 2)
    assert lm.contexts == [f"Input: diff {i}\nOutput:" for i in ids]
    assert results["configs"]["instructeval_ii_diff"]["metadata"]["test_ids"] == ids
