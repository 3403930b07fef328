"""``prompt_format=tk-instruct``: every Natural Instructions prompt is Tk-Instruct's collator string.

The reference below rebuilds ``DataCollatorForNI``'s source (Tk-Instruct ``src/ni_collator.py``,
``add_task_name=False``) from the raw task file by its rules: the ``Now complete the following example
-`` block, the leading spaces of the example headings and their ``Output:``/``Explanation:`` lines, a
period where a part does not end in punctuation, the trailing ``"Output: "``, stripped inputs, and its
length rule (an example joins only while the prompt stays within ``max_source_length`` tokens, the
source cut past it). It is checked against the task's prompt for the 12 shared tasks x their 100
instances x every collator encoding (and no instruction), at the scripts' 1,024 tokens and at a
limit short enough that the rule drops examples and cuts prompts.
"""

from __future__ import annotations

import json
import string

import lm_eval
import pytest

import instructeval_tasks
from instructeval_tasks.encodings import NI_ENCODINGS
from instructeval_tasks.errors import UserError
from instructeval_tasks.ni.names import NI_TASKS
from instructeval_tasks.ni.source import read_task_file
from instructeval_tasks.ni.tk_prompt import TokenCounter, tk_instruct_prompt

WORDS = TokenCounter(str.split)  # a whitespace "tokenizer": counting and cutting are the caller's, as the collator's


def collator_source(task: dict, instance: dict, encoding: str | None, tokens, max_len: int) -> str:
    """The collator's ``source`` for one instance, from the raw task file (module doc)."""
    definition_on, n_pos, n_neg, explain = ((False, 0, 0, False) if encoding is None else
                                            ("definition" in NI_ENCODINGS[encoding][0], NI_ENCODINGS[encoding][1],
                                             NI_ENCODINGS[encoding][2], NI_ENCODINGS[encoding][3]))
    if encoding is not None and "positive_examples" not in NI_ENCODINGS[encoding][0]:
        n_pos = 0
    if encoding is not None and "negative_examples" not in NI_ENCODINGS[encoding][0]:
        n_neg = 0
    task_input = "Now complete the following example -\n" + f"Input: {instance['input'].strip()}"
    if task_input[-1] not in string.punctuation:
        task_input += "."
    task_input += "\n" + "Output: "
    definition = ""
    if definition_on:
        definition = "Definition: " + task["Definition"][0].strip()
        if definition[-1] not in string.punctuation:
            definition += "."
        definition += "\n\n"

    def example(label, idx, ex):
        text = f" {label} Example {idx + 1} -\n" + f"Input: {ex['input'].strip()}"
        if text[-1] not in string.punctuation:
            text += "."
        text += "\n" + f" Output: {ex['output'].strip()}"
        if text[-1] not in string.punctuation:
            text += "."
        text += "\n"
        if explain and "explanation" in ex:
            text += f" Explanation: {ex['explanation'].strip()}"
            if text[-1] not in string.punctuation:
                text += "."
            text += "\n"
        return text + "\n"

    pos, neg = [], []
    for idx, ex in enumerate(task["Positive Examples"][:n_pos]):
        text = example("Positive", idx, ex)
        if len(tokens(definition + " ".join(pos) + text + task_input)) > max_len:
            break
        pos.append(text)
    for idx, ex in enumerate(task["Negative Examples"][:n_neg]):
        text = example("Negative", idx, ex)
        if len(tokens(definition + " ".join(pos) + " ".join(neg) + text + task_input)) > max_len:
            break
        neg.append(text)
    source = definition + "".join(pos) + "".join(neg) + task_input
    return source if len(tokens(source)) <= max_len else " ".join(tokens(source)[:max_len])


@pytest.mark.parametrize("max_len", [1024, 120])
def test_every_shared_prompt_is_the_collators_string(shared_data_dir, max_len):
    checked = dropped = 0
    for task in NI_TASKS:
        raw = json.loads((shared_data_dir / "natural_instructions" / "tasks" / f"{task}.json").read_text(encoding="utf-8"))
        tf = read_task_file(task, str(shared_data_dir))
        for instance in raw["Instances"][:100]:
            for encoding in (None, *NI_ENCODINGS):
                want = collator_source(raw, instance, encoding, str.split, max_len)
                got = tk_instruct_prompt(tf, encoding, instance["input"], WORDS, max_source_length=max_len)
                assert got == want, (task, instance["id"], encoding)
                checked += 1
                dropped += encoding == "definition_pos2" and want.count("Positive Example") < 2
    assert checked == 12 * 100 * (1 + len(NI_ENCODINGS))
    assert (dropped > 0) == (max_len < 1024)  # the short limit exercises the length rule, the scripts' rarely does


def evaluate(lm, tasks, metadata, **kwargs):
    tm = instructeval_tasks.task_manager(metadata=metadata)
    return lm_eval.simple_evaluate(model=lm, tasks=tasks, task_manager=tm, bootstrap_iters=0, verbosity="ERROR", **kwargs)


def test_the_task_sends_the_collators_string_counted_with_the_models_tokenizer(ni_data_dir, ni, tiny_model_dir,
                                                                                 tiny_tokenizer):
    raw = json.loads((ni_data_dir / "natural_instructions" / "tasks" / f"{ni.TOY_TASK.removeprefix('instructeval_ni_')}.json")
                     .read_text(encoding="utf-8"))
    for encoding in ("definition_pos2", "definition_pos2_neg2_explanations", None):
        lm = ni.ScriptedLM(lambda c: "x")
        meta = {"data_dir": str(ni_data_dir), "prompt_format": "tk-instruct", "score_tokenizer": str(tiny_model_dir)}
        meta.update({"instruction_encoding": encoding} if encoding else {"method": "null"})
        results = evaluate(lm, [ni.TOY_TASK], meta)
        tokens = lambda text: tiny_tokenizer(text)["input_ids"]  # noqa: E731
        assert lm.contexts == [collator_source(raw, inst, encoding, tokens, 1024) for inst in raw["Instances"][:3]]
        assert lm.contexts[0].endswith("\nOutput: ") and "Now complete the following example -\n" in lm.contexts[0]
        assert results["configs"][ni.TOY_TASK]["metadata"]["prompt_format"] == "tk-instruct"


@pytest.mark.parametrize("meta, kwargs, says", [
    ({"prompt_format": "tk-instruct", "instruction_encoding": "full"}, {}, "renders the collator's encodings"),
    ({"prompt_format": "tk-instruct"}, {"num_fewshot": 2}, "drop --num_fewshot 2"),
    ({"prompt_format": "tk-instruct", "score_tokenizer": ""}, {}, "counts the prompt's tokens with the model's tokenizer"),
    ({"prompt_format": "tk"}, {}, "expected one of schema, tk-instruct"),
])
def test_tk_instruct_refusals_are_one_clear_line(ni_data_dir, ni, tiny_model_dir, meta, kwargs, says):
    meta = {"data_dir": str(ni_data_dir), "score_tokenizer": str(tiny_model_dir), **meta}
    if meta.get("score_tokenizer") == "":
        del meta["score_tokenizer"]
    with pytest.raises(UserError, match=says):
        evaluate(ni.ScriptedLM(lambda c: "x"), [ni.TOY_TASK], meta, **kwargs)


def test_prompt_format_is_refused_outside_the_natural_instructions_tasks(scripted_lm, shared_data_dir):
    with pytest.raises(UserError, match="applies to the Natural Instructions tasks"):
        evaluate(scripted_lm(lambda c: "x"), ["instructeval_boolq"],
                 {"data_dir": str(shared_data_dir), "prompt_format": "tk-instruct", "test_sample": 4})
