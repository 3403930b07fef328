"""On the project's real sample data (``../shared/data``; skipped when absent)."""

from __future__ import annotations

from collections import Counter

import pytest

from instructeval_tasks.preview import build_task, render_prompt

ANSWER_FIELD = {
    "agnews": "Category", "anli": "Relation", "boolq": "Answer", "imdb": "Sentiment", "emotion": "Emotion",
    "cosmosqa": "Answer", "hellaswag": "Answer", "nq_open": "Answer", "triviaqa": "Answer",
}
FIRST_FIELD = {
    "agnews": "News", "anli": "Premise", "boolq": "Passage", "imdb": "Review", "emotion": "Tweet",
    "cosmosqa": "Passage", "hellaswag": "Sentence", "nq_open": "Question", "triviaqa": "Question",
}
VERBALIZERS = {
    "agnews": ["World", "Sports", "Business", "Sci/Tech"],
    "anli": ["Entail", "Neutral", "Contradict"],
    "boolq": ["False", "True"],
    "imdb": ["Negative", "Positive"],
    "emotion": ["Anger", "Joy", "Optimism", "Sadness"],
}
SIX_SHOT_COUNTS = {
    "agnews": [1, 1, 2, 2], "emotion": [1, 1, 2, 2], "anli": [2, 2, 2], "boolq": [3, 3], "imdb": [3, 3],
}


@pytest.fixture(scope="module")
def shared_tasks(shared_data_dir):
    return {
        task: build_task(task, {"data_dir": str(shared_data_dir), "method": "generic", "demo_seed": 0}, 6)
        for task in ANSWER_FIELD
    }


@pytest.mark.parametrize("task", list(ANSWER_FIELD))
def test_six_shot_prompt_renders(shared_tasks, task):
    task_obj = shared_tasks[task]
    assert len(task_obj.eval_docs) > 100
    context, continuations = render_prompt(task_obj, 0)
    assert context.startswith("Solve the following task:\n\n" + FIRST_FIELD[task] + ": ")
    assert context.endswith("\n" + ANSWER_FIELD[task] + ":")
    blocks = context.split("\n\n" + FIRST_FIELD[task] + ": ")
    assert len(blocks) == 8  # the instruction, six demos, the test block
    answers = [line.split(": ", 1)[1] for line in context.split("\n") if line.startswith(ANSWER_FIELD[task] + ": ")]
    assert len(answers) == 6
    if task in VERBALIZERS:
        assert continuations == [" " + v for v in VERBALIZERS[task]]
        assert set(answers) <= set(VERBALIZERS[task])
    elif task in ("cosmosqa", "hellaswag"):
        assert len(continuations) == 4
    else:
        assert continuations == []


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("task", list(SIX_SHOT_COUNTS))
def test_six_shot_demo_sets_are_class_balanced(shared_data_dir, task, seed):
    task_obj = build_task(task, {"data_dir": str(shared_data_dir), "demo_seed": seed}, 6)
    context, _ = render_prompt(task_obj, 0)
    answers = [line.split(": ", 1)[1] for line in context.split("\n") if line.startswith(ANSWER_FIELD[task] + ": ")]
    counts = Counter(answers)
    assert [counts[v] for v in VERBALIZERS[task]] == SIX_SHOT_COUNTS[task]
    label_field = "answer" if task == "boolq" else "label"
    train = task_obj.dataset[task_obj.config.training_split]
    labels = Counter(train[i][label_field] for i in task_obj.dump_config()["metadata"]["demo_ids"])
    assert sorted(labels.values()) == sorted(SIX_SHOT_COUNTS[task])


@pytest.mark.parametrize(
    "task,field,expected",
    [
        ("agnews", "label", {0: 25, 1: 25, 2: 25, 3: 25}),
        ("emotion", "label", {0: 25, 1: 25, 2: 25, 3: 25}),
        ("anli", "label", {0: 33, 1: 33, 2: 34}),
        ("boolq", "answer", {False: 50, True: 50}),
        ("imdb", "label", {0: 50, 1: 50}),
    ],
)
def test_test_sample_of_100_is_balanced(shared_data_dir, task, field, expected):
    task_obj = build_task(task, {"data_dir": str(shared_data_dir), "test_sample": 100}, 0)
    docs = list(task_obj.eval_docs)
    assert len(docs) == 100
    assert Counter(d[field] for d in docs) == expected


@pytest.mark.parametrize("task", ["cosmosqa", "hellaswag", "nq_open", "triviaqa"])
def test_test_sample_of_100_for_mcq_and_gqa(shared_data_dir, task):
    task_obj = build_task(task, {"data_dir": str(shared_data_dir), "test_sample": 100}, 0)
    assert len(task_obj.eval_docs) == 100
    assert len(set(task_obj.dump_config()["metadata"]["test_ids"])) == 100


def test_truncation_to_100_words_on_imdb(shared_data_dir):
    task_obj = build_task("imdb", {"data_dir": str(shared_data_dir), "truncate_words": 100, "test_sample": 20}, 6)
    for doc in task_obj.eval_docs:
        words = doc["text"].split(" ")
        assert len(words) <= 100
        if len(words) == 100 and doc["text"].endswith("..."):
            break
    else:
        pytest.fail("no IMDB review of the sample was truncated")
    context, _ = render_prompt(task_obj, 0)
    for block in context.split("\n\n")[1:]:
        review = block.split("\n")[0].removeprefix("Review: ")
        assert len(review.split(" ")) <= 100
