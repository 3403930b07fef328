"""Demo sets, test samples and truncation (protocol.md §5).

One fixed demo set per ``demo_seed``, shared by every eval document, independent of document
order, of the harness's global few-shot seed and of the data-parallel rank; class-balanced for
classification; selected exactly as the original ``sample_instances`` does.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from instructeval_tasks.preview import build_task, render_prompt
from instructeval_tasks.sampling import (
    balanced_counts,
    balanced_indices,
    select_indices,
    truncate_fields,
    truncate_words,
    uniform_indices,
)

TASKS = ["agnews", "anli", "boolq", "imdb", "emotion", "cosmosqa", "hellaswag", "nq_open", "triviaqa"]
CLS_LABEL = {"agnews": "label", "anli": "label", "boolq": "answer", "imdb": "label", "emotion": "label"}
LOCAL_DIR = {"agnews": "ag_news", "anli": "anli", "boolq": "boolq", "imdb": "imdb", "emotion": "tweet_eval_emotion",
             "cosmosqa": "cosmos_qa", "hellaswag": "hellaswag", "nq_open": "nq_open", "triviaqa": "trivia_qa"}


def build(data_dir, task, k=6, **metadata):
    return build_task(task, {"data_dir": str(data_dir), **metadata}, k)


def demo_part(task_obj, doc_index):
    """The prompt up to the test block: instruction + demos."""
    doc = task_obj.eval_docs[doc_index]
    context = task_obj.fewshot_context(doc, int(task_obj.config.num_fewshot))
    test_block = task_obj.doc_to_text(doc)
    assert context.endswith(test_block)
    return context[: len(context) - len(test_block)]


# ------------------------------------------------------------------------------ the reference

def reference_sample_indices(labels, size, n, seed):
    """protocol.md §5.1 (``data/dataset.py::sample_instances``), on a private RNG seeded with ``seed``.

    The original calls ``random.seed(seed)`` on the global RNG; ``Random().seed(seed)`` is the same
    generator state without touching global state.
    """
    rnd = random.Random()
    rnd.seed(seed)
    if labels is None:
        return rnd.sample(range(size), n)
    classes = sorted(set(labels))  # ascending ints; False before True
    c = len(classes)
    counts = [n // c] * (c - n % c) + [n // c + 1] * (n % c)
    idx = []
    for count, cls in zip(counts, classes):
        idx += rnd.sample([i for i in range(size) if labels[i] == cls], count)
    rnd.shuffle(idx)
    return idx


@pytest.mark.parametrize("seed", [0, 1, 2, 7, 42, 1234])
@pytest.mark.parametrize(
    "labels,n",
    [
        ([i % 4 for i in range(40)], 6),
        ([(i * 7) % 4 for i in range(103)], 100),
        ([i % 3 for i in range(30)], 6),
        ([0] * 50 + [1] * 50 + [2] * 50, 100),
        ([i % 2 == 0 for i in range(20)], 6),
        ([True] * 60 + [False] * 60, 100),
        ([3, 1, 2, 0, 2, 3, 1, 0, 0, 1, 2, 3], 4),
    ],
)
def test_balanced_indices_reproduce_the_original(labels, n, seed):
    assert balanced_indices(labels, n, seed) == reference_sample_indices(labels, len(labels), n, seed)


@pytest.mark.parametrize("seed", [0, 1, 5, 29])
@pytest.mark.parametrize("size,n", [(12, 6), (100, 100), (2000, 100), (7, 3)])
def test_uniform_indices_reproduce_the_original(size, n, seed):
    assert uniform_indices(size, n, seed) == reference_sample_indices(None, size, n, seed)
    assert select_indices(None, size, n, seed) == uniform_indices(size, n, seed)


def test_sampling_leaves_the_global_rng_alone():
    random.seed(99)
    expected = random.random()
    random.seed(99)
    balanced_indices([i % 4 for i in range(40)], 6, 3)
    uniform_indices(40, 6, 3)
    assert random.random() == expected


def test_balanced_counts():
    assert balanced_counts(6, 4) == [1, 1, 2, 2]
    assert balanced_counts(6, 3) == [2, 2, 2]
    assert balanced_counts(6, 2) == [3, 3]
    assert balanced_counts(100, 4) == [25, 25, 25, 25]
    assert balanced_counts(100, 3) == [33, 33, 34]
    assert balanced_counts(100, 2) == [50, 50]
    assert balanced_counts(3, 4) == [0, 1, 1, 1]


def test_too_few_rows_of_a_class_is_an_error():
    with pytest.raises(ValueError, match="class 1 has 1 rows"):
        balanced_indices([0, 0, 0, 1], 4, 0)
    with pytest.raises(ValueError):
        uniform_indices(3, 4, 0)


def test_too_few_train_rows_names_the_task(tiny_data_dir):
    task_obj = build(tiny_data_dir, "agnews", 16)
    with pytest.raises(ValueError, match="instructeval_agnews"):
        render_prompt(task_obj, 0)


# ------------------------------------------------------------------------------ fixed demo sets

@pytest.mark.parametrize("task", TASKS)
def test_same_demos_for_every_doc_in_any_order(tiny_data_dir, tiny_rows, task):
    task_obj = build(tiny_data_dir, task, 6, demo_seed=3)
    n = len(task_obj.eval_docs)
    forward = [demo_part(task_obj, i) for i in range(n)]
    task_obj.set_fewshot_seed(123)  # the harness passes its global few-shot seed to every task
    backward = [demo_part(task_obj, i) for i in reversed(range(n))]
    assert len(set(forward)) == 1
    assert set(backward) == set(forward)
    assert forward[0].count("\n\n") == 6
    ids = task_obj.sampler.demo_ids(6)
    assert ids == reference_sample_indices(
        [r[CLS_LABEL[task]] for r in tiny_rows[LOCAL_DIR[task]]["train"]] if task in CLS_LABEL else None, 12, 6, 3
    )


@pytest.mark.parametrize("task", ["agnews", "boolq", "hellaswag", "triviaqa"])
def test_demos_do_not_depend_on_the_global_fewshot_seed(tiny_data_dir, task):
    prompts = []
    for seed in (None, 0, 123, 1234):
        task_obj = build(tiny_data_dir, task, 6, demo_seed=2)
        task_obj.set_fewshot_seed(seed)
        prompts.append(render_prompt(task_obj, 0)[0])
    assert len(set(prompts)) == 1


@pytest.mark.parametrize("task", ["agnews", "cosmosqa", "nq_open"])
def test_demos_do_not_depend_on_the_eval_split_order(tiny_data_dir, tiny_data_copy, tiny_rows, task):
    local = LOCAL_DIR[task]
    shuffled = tiny_data_copy
    rows = list(tiny_rows[local]["eval"])
    random.Random(5).shuffle(rows)
    (shuffled / local / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    original = build(tiny_data_dir, task, 6, demo_seed=4)
    reordered = build(shuffled, task, 6, demo_seed=4)
    assert reordered.eval_docs[0] != original.eval_docs[0]
    assert demo_part(reordered, 0) == demo_part(original, 0)
    assert reordered.sampler.demo_ids(6) == original.sampler.demo_ids(6)


@pytest.mark.parametrize("task", ["emotion", "hellaswag"])
def test_demos_do_not_depend_on_the_data_parallel_rank(tiny_data_dir, task):
    contexts = {}
    for rank, world_size in ((0, 1), (0, 2), (1, 2)):
        task_obj = build(tiny_data_dir, task, 6, demo_seed=1)
        task_obj.set_fewshot_seed(1234)
        task_obj.build_all_requests(rank=rank, world_size=world_size)
        for inst in task_obj.instances:
            context, block = inst.arguments[0], task_obj.doc_to_text(inst.doc)
            assert context.endswith(block)
            contexts.setdefault((rank, world_size), set()).add(context[: len(context) - len(block)])
    assert len(contexts) == 3
    assert all(len(v) == 1 for v in contexts.values())
    assert len({next(iter(v)) for v in contexts.values()}) == 1


@pytest.mark.parametrize("task", TASKS)
def test_different_seeds_give_different_sets(tiny_data_dir, task):
    sets = []
    for seed in range(5):
        task_obj = build(tiny_data_dir, task, 6, demo_seed=seed)
        sets.append(frozenset(task_obj.sampler.demo_ids(6)))
    assert len(set(sets)) == 5


def test_same_seed_same_set_across_task_objects(tiny_data_dir):
    a = build(tiny_data_dir, "anli", 6, demo_seed=9)
    b = build(tiny_data_dir, "anli", 6, demo_seed=9)
    assert render_prompt(a, 5) == render_prompt(b, 5)


# ------------------------------------------------------------------------------ class balance

def _demo_labels(task_obj, train, task, k):
    return [train[i][CLS_LABEL[task]] for i in task_obj.sampler.demo_ids(k)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "task,expected",
    [
        ("agnews", {0: 1, 1: 1, 2: 2, 3: 2}),  # labels 2 and 3 (Business, Sci/Tech) get two each
        ("emotion", {0: 1, 1: 1, 2: 2, 3: 2}),  # Optimism and Sadness get two each
        ("anli", {0: 2, 1: 2, 2: 2}),
        ("boolq", {False: 3, True: 3}),
        ("imdb", {0: 3, 1: 3}),
    ],
)
def test_six_shot_demo_sets_are_class_balanced(tiny_data_dir, tiny_rows, task, expected, seed):
    task_obj = build(tiny_data_dir, task, 6, demo_seed=seed)
    assert Counter(_demo_labels(task_obj, tiny_rows[LOCAL_DIR[task]]["train"], task, 6)) == expected


def test_demo_answers_in_the_prompt_are_balanced(tiny_data_dir):
    context, _ = render_prompt(build(tiny_data_dir, "agnews", 6, demo_seed=0), 0)
    answers = Counter(line.removeprefix("Category: ") for line in context.split("\n") if line.startswith("Category: "))
    assert answers == {"World": 1, "Sports": 1, "Business": 2, "Sci/Tech": 2}


# ------------------------------------------------------------------------------ provenance

@pytest.mark.parametrize("task", TASKS)
def test_demo_provenance_in_dump_config(tiny_data_dir, task):
    task_obj = build(tiny_data_dir, task, 6, demo_seed=2)
    meta = task_obj.dump_config()["metadata"]
    assert meta["demo_seed"] == 2
    assert meta["num_fewshot"] == 6
    assert meta["setting"] == "few_shot"
    assert meta["demo_ids"] == task_obj.sampler.demo_ids(6)
    assert len(meta["demo_ids"]) == 6
    zero = build(tiny_data_dir, task, 0, demo_seed=2).dump_config()["metadata"]
    assert zero["num_fewshot"] == 0 and zero["demo_ids"] == [] and zero["setting"] == "zero_shot"


def test_demo_ids_follow_prompt_order(tiny_data_dir, tiny_rows):
    task_obj = build(tiny_data_dir, "agnews", 6, demo_seed=0)
    ids = task_obj.dump_config()["metadata"]["demo_ids"]
    train = tiny_rows["ag_news"]["train"]
    demos = demo_part(task_obj, 0)
    positions = [demos.index(f"News: {train[i]['text']}\n") for i in ids]
    assert positions == sorted(positions)


# ------------------------------------------------------------------------------ test samples

@pytest.mark.parametrize(
    "task,n,expected",
    [
        ("agnews", 4, {0: 1, 1: 1, 2: 1, 3: 1}),
        ("agnews", 8, {0: 2, 1: 2, 2: 2, 3: 2}),
        ("emotion", 6, {0: 1, 1: 1, 2: 2, 3: 2}),
        ("anli", 7, {0: 2, 1: 2, 2: 3}),  # the extra item goes to label 2 (33/33/34 at 100)
        ("boolq", 6, {False: 3, True: 3}),
        ("imdb", 4, {0: 2, 1: 2}),
    ],
)
def test_test_sample_is_class_balanced(tiny_data_dir, tiny_rows, task, n, expected):
    task_obj = build(tiny_data_dir, task, 0, test_sample=n)
    docs = list(task_obj.eval_docs)
    assert len(docs) == n
    assert Counter(d[CLS_LABEL[task]] for d in docs) == expected
    eval_rows = tiny_rows[LOCAL_DIR[task]]["eval"]
    ids = reference_sample_indices([r[CLS_LABEL[task]] for r in eval_rows], len(eval_rows), n, 0)
    assert [d[CLS_LABEL[task]] for d in docs] == [eval_rows[i][CLS_LABEL[task]] for i in ids]
    meta = task_obj.dump_config()["metadata"]
    assert meta["test_ids"] == ids
    assert meta["test_sample"] == n and meta["test_seed"] == 0
    assert meta["eval_size"] == n


@pytest.mark.parametrize("task", ["cosmosqa", "hellaswag", "nq_open", "triviaqa"])
def test_test_sample_is_uniform_for_mcq_and_gqa(tiny_data_dir, tiny_rows, task):
    task_obj = build(tiny_data_dir, task, 0, test_sample=5, test_seed=3)
    ids = random.Random(3).sample(range(8), 5)
    eval_rows = tiny_rows[LOCAL_DIR[task]]["eval"]
    assert [d["question"] if "question" in d else d["ctx"] for d in task_obj.eval_docs] == [
        eval_rows[i]["question"] if "question" in eval_rows[i] else eval_rows[i]["ctx"] for i in ids
    ]
    assert task_obj.dump_config()["metadata"]["test_ids"] == ids


def test_test_sample_does_not_change_the_demos(tiny_data_dir):
    full = build(tiny_data_dir, "agnews", 6, demo_seed=1)
    sampled = build(tiny_data_dir, "agnews", 6, demo_seed=1, test_sample=4, test_seed=2)
    assert demo_part(full, 0) == demo_part(sampled, 0)


# ------------------------------------------------------------------------------ truncation

def test_truncate_words_hundred_word_rule():
    words = [f"w{i}" for i in range(150)]
    assert truncate_words(" ".join(words[:100]), 100) == " ".join(words[:100])
    assert truncate_words(" ".join(words[:101]), 100) == " ".join(words[:100]) + "..."
    assert truncate_words(" ".join(words), 100) == " ".join(words[:100]) + "..."
    assert truncate_words("", 100) == ""


def test_truncate_words_splits_on_single_spaces_only():
    # "a  b" is three words ('a', '', 'b'); newlines and tabs are not separators.
    assert truncate_words("a  b c", 2) == "a ..."
    assert truncate_words("a\nb\tc d", 1) == "a\nb\tc..."
    assert truncate_words("a b ", 2) == "a b..."  # the trailing empty word counts
    assert truncate_words("one two three", 3) == "one two three"


def test_truncate_fields_only_touches_the_named_fields():
    doc = {"context": "a b c d", "question": "e f g", "answer0": "h i j k", "label": 1}
    out = truncate_fields(doc, ("context", "question"), 2)
    assert out == {"context": "a b...", "question": "e f...", "answer0": "h i j k", "label": 1}
    assert doc["context"] == "a b c d"  # a copy
    assert truncate_fields(doc, ("context",), None) == doc


def test_truncation_applies_to_demos_and_test_items_not_choices(tiny_data_dir):
    task_obj = build(tiny_data_dir, "cosmosqa", 3, truncate_words=3)
    context, conts = render_prompt(task_obj, 0)
    assert context == (
        "Passage: He studied every...\nQuestion: What may happen...\nAnswer: He passes the exam .\n\n"
        "Passage: The concert was...\nQuestion: Why was the...\nAnswer: The singer was sick .\n\n"
        "Passage: I missed the...\nQuestion: Why did I...\nAnswer: I missed the bus .\n\n"
        "Passage: I lost my...\nQuestion: Why did I...\nAnswer:"
    )
    assert conts == [" I could not get in .", " I liked the weather .", " I was early .", " None of the above choices ."]
    assert task_obj.dump_config()["metadata"]["truncate_words"] == 3


def test_truncation_of_classification_fields(tiny_data_dir):
    context, conts = render_prompt(build(tiny_data_dir, "anli", 3, truncate_words=2), 0)
    assert context == (
        "Premise: The lake...\nHypothesis: It was...\nRelation: Entail\n\n"
        "Premise: The cat...\nHypothesis: The cat...\nRelation: Contradict\n\n"
        "Premise: A chef...\nHypothesis: The chef...\nRelation: Neutral\n\n"
        "Premise: A woman...\nHypothesis: A woman...\nRelation:"
    )
    assert conts == [" Entail", " Neutral", " Contradict"]


def test_no_truncation_by_default(tiny_data_copy, tiny_rows):
    data = tiny_data_copy
    long_text = " ".join(f"word{i}" for i in range(130))
    rows = [dict(r) for r in tiny_rows["imdb"]["eval"]]
    rows[0]["text"] = long_text
    (data / "imdb" / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    context, _ = render_prompt(build(data, "imdb", 0), 0)
    assert context == f"Review: {long_text}\nSentiment:"
    context, _ = render_prompt(build(data, "imdb", 0, truncate_words=100), 0)
    assert context == "Review: " + " ".join(f"word{i}" for i in range(100)) + "...\nSentiment:"


def _write_split(folder, name, rows):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_a_test_sample_is_balanced_over_the_tasks_classes_not_the_files(tiny_data_copy, tiny_rows):
    """An eval file without a class cannot give a sample balanced over the task's four classes."""
    rows = [r for r in tiny_rows["ag_news"]["eval"] if r["label"] != 3]
    _write_split(tiny_data_copy / "ag_news", "eval.jsonl", rows)
    with pytest.raises(Exception, match=r"test_sample=3 must be balanced over the task's classes.*class 3 has no rows"):
        build(tiny_data_copy, "agnews", 0, test_sample=3)


def test_demos_are_balanced_over_the_tasks_classes_not_the_files(tiny_data_copy, tiny_rows):
    """A single-class train split used to give six 'World' demos without a word; now it is an error."""
    rows = [r for r in tiny_rows["ag_news"]["train"] if r["label"] == 0]
    _write_split(tiny_data_copy / "ag_news", "train.jsonl", rows * 6)
    with pytest.raises(ValueError, match=r"cannot draw 6 demonstrations .*classes 1, 2, 3 have no rows \(the task's classes: 0, 1, 2, 3\)"):
        render_prompt(build(tiny_data_copy, "agnews", 6), 0)
