"""Golden prompts of all nine tasks, written out by hand (protocol.md §2.2-§2.4, harness.md §8).

The demo rows below were derived by hand from ``tests/conftest.py``'s tiny data and the
protocol's sampling algorithm (§5.1) with demo_seed 0; ``test_demo_rows_follow_the_protocol``
re-derives them with an independent ``random.Random`` so a changed data row is caught there.

Layout (harness): ``description + Σ(demo + " " + answer + "\\n\\n") + test_block``, the test
block ending at the answer field's colon; the space before the answer is the continuation's.
Deliberate departures from the original that these goldens pin:

- null instruction: no leading ``"\\n"`` (the original starts with one);
- the instruction is ``lstrip()``-ed, its trailing whitespace kept;
- the instruction is inserted verbatim, never rendered as Jinja.
"""

from __future__ import annotations

import random

import pytest

from instructeval_tasks.preview import build_task, render_prompt

GENERIC_0 = "Solve the following task:\n\n"

# task -> (K, demo_seed-0 train rows in prompt order, few-shot body, zero-shot test block of eval doc 0,
#          continuations of eval doc 0). Bodies start at the first demo; no instruction.
GOLDEN = {
    "agnews": (
        3, [7, 3, 4],
        "News: Sprinter breaks the world record.\nCategory: Sports\n\n"
        "News: New chip doubles battery life.\nCategory: Sci/Tech\n\n"
        "News: Bank shares fall after rate rise.\nCategory: Business\n\n"
        "News: Fears for pension after talks.\nCategory:",
        "News: Fears for pension after talks.\nCategory:",
        [" World", " Sports", " Business", " Sci/Tech"],
    ),
    "anli": (
        3, [7, 1, 10],
        "Premise: The lake froze last winter.\nHypothesis: It was cold last winter.\nRelation: Entail\n\n"
        "Premise: The cat sleeps on the warm mat.\nHypothesis: The cat is awake.\nRelation: Contradict\n\n"
        "Premise: A chef cooks pasta for dinner.\nHypothesis: The chef is famous.\nRelation: Neutral\n\n"
        "Premise: A woman reads a book in the garden.\nHypothesis: A woman is outdoors.\nRelation:",
        "Premise: A woman reads a book in the garden.\nHypothesis: A woman is outdoors.\nRelation:",
        [" Entail", " Neutral", " Contradict"],
    ),
    "boolq": (
        2, [7, 6],
        "Passage: Paris is the capital and largest city of France.\nQuestion: is paris the capital of france\nAnswer: True\n\n"
        "Passage: The Moon is about a quarter of the diameter of the Earth.\nQuestion: is the moon larger than the earth\nAnswer: False\n\n"
        "Passage: The Nile is a major river in north-east Africa.\nQuestion: is the nile a river\nAnswer:",
        "Passage: The Nile is a major river in north-east Africa.\nQuestion: is the nile a river\nAnswer:",
        [" False", " True"],
    ),
    "imdb": (
        2, [6, 7],
        "Review: A clever script with sharp dialogue.\nSentiment: Positive\n\n"
        "Review: The worst sequel of the year.\nSentiment: Negative\n\n"
        "Review: An instant classic.\nSentiment:",
        "Review: An instant classic.\nSentiment:",
        [" Negative", " Positive"],
    ),
    "emotion": (
        3, [5, 3, 7],
        "Tweet: my team won the final!!\nEmotion: Joy\n\n"
        "Tweet: miss my grandma so much today\nEmotion: Sadness\n\n"
        "Tweet: every setback is a setup for a comeback\nEmotion: Optimism\n\n"
        "Tweet: @user that referee was a joke #angry\nEmotion:",
        "Tweet: @user that referee was a joke #angry\nEmotion:",
        [" Anger", " Joy", " Optimism", " Sadness"],
    ),
    "cosmosqa": (
        3, [6, 11, 0],
        "Passage: He studied every evening for a month before the exam .\nQuestion: What may happen next ?\nAnswer: He passes the exam .\n\n"
        "Passage: The concert was cancelled because the singer was ill .\nQuestion: Why was the concert cancelled ?\nAnswer: The singer was sick .\n\n"
        "Passage: I missed the bus , so I walked to work in the rain .\nQuestion: Why did I walk to work ?\nAnswer: I missed the bus .\n\n"
        "Passage: I lost my keys and had to wait outside for an hour .\nQuestion: Why did I wait outside ?\nAnswer:",
        "Passage: I lost my keys and had to wait outside for an hour .\nQuestion: Why did I wait outside ?\nAnswer:",
        [" I could not get in .", " I liked the weather .", " I was early .", " None of the above choices ."],
    ),
    "hellaswag": (
        3, [6, 11, 0],
        "Sentence: A girl holds a guitar on her lap. she\nAnswer: strums a few chords.\n\n"
        "Sentence: A woman clips a leash to her dog. they\nAnswer: walk down the street.\n\n"
        "Sentence: A man fills the sink with water. he\nAnswer: adds soap and washes the plates.\n\n"
        "Sentence: A man sprays the car with a hose. he\nAnswer:",
        "Sentence: A man sprays the car with a hose. he\nAnswer:",
        [" scrubs it with a sponge.", " eats the hose.", " paints the road.", " sleeps in the trunk."],
    ),
    "nq_open": (
        2, [6, 11],
        "Question: what gas do plants absorb\nAnswer: carbon dioxide\n\n"
        "Question: what is the chemical symbol for gold\nAnswer: Au\n\n"
        "Question: where did they film hot tub time machine\nAnswer:",
        "Question: where did they film hot tub time machine\nAnswer:",
        [],
    ),
    "triviaqa": (
        2, [6, 11],
        "Question: Which airport serves Chicago?\nAnswer: O'Hare\n\n"
        "Question: How many sides has a hexagon?\nAnswer: Six\n\n"
        "Question: In which city were Rotary Clubs set up in 1905?\nAnswer:",
        "Question: In which city were Rotary Clubs set up in 1905?\nAnswer:",
        [],
    ),
}
TASKS = list(GOLDEN)
CHOICE_TASKS = [t for t in TASKS if GOLDEN[t][4]]
GQA_TASKS = ["nq_open", "triviaqa"]

# Label field and class-balanced flag of each task (protocol.md §4/§5), independent of specs.py.
BALANCED_LABEL = {"agnews": "label", "anli": "label", "boolq": "answer", "imdb": "label", "emotion": "label"}
LOCAL_DIR = {"agnews": "ag_news", "anli": "anli", "boolq": "boolq", "imdb": "imdb", "emotion": "tweet_eval_emotion",
             "cosmosqa": "cosmos_qa", "hellaswag": "hellaswag", "nq_open": "nq_open", "triviaqa": "trivia_qa"}


def prompt(data_dir, task, k, doc=0, **metadata):
    task_obj = build_task(task, {"data_dir": str(data_dir), **metadata}, k)
    return render_prompt(task_obj, doc)


# ------------------------------------------------------------------------------------ the demo rows

def _reference_demo_rows(labels, size, k, seed):
    """protocol.md §5.1 on a private RNG: class-balanced for CLS, uniform otherwise."""
    rng = random.Random()
    rng.seed(seed)
    if labels is None:
        return rng.sample(range(size), k)
    classes = sorted(set(labels))
    c = len(classes)
    counts = [k // c] * (c - k % c) + [k // c + 1] * (k % c)
    idx = []
    for count, cls in zip(counts, classes):
        idx += rng.sample([i for i, label in enumerate(labels) if label == cls], count)
    rng.shuffle(idx)
    return idx


@pytest.mark.parametrize("task", TASKS)
def test_demo_rows_follow_the_protocol(tiny_rows, task):
    train = tiny_rows[LOCAL_DIR[task]]["train"]
    k, rows = GOLDEN[task][0], GOLDEN[task][1]
    labels = [r[BALANCED_LABEL[task]] for r in train] if task in BALANCED_LABEL else None
    assert _reference_demo_rows(labels, len(train), k, 0) == rows


@pytest.mark.parametrize("task", TASKS)
def test_recorded_demo_ids_are_the_golden_rows(tiny_data_dir, task):
    k, rows = GOLDEN[task][0], GOLDEN[task][1]
    task_obj = build_task(task, {"data_dir": str(tiny_data_dir)}, k)
    assert task_obj.dump_config()["metadata"]["demo_ids"] == rows


# ------------------------------------------------------------------------------------ few-shot

@pytest.mark.parametrize("task", TASKS)
def test_few_shot_with_a_bank_instruction(tiny_data_dir, task):
    k, _rows, body, _block, continuations = GOLDEN[task]
    context, conts = prompt(tiny_data_dir, task, k, method="generic", instruction_index=0)
    assert context == GENERIC_0 + body
    assert conts == continuations


@pytest.mark.parametrize("task", TASKS)
def test_few_shot_with_the_null_instruction_has_no_leading_newline(tiny_data_dir, task):
    k, _rows, body, _block, _conts = GOLDEN[task]
    for metadata in ({}, {"method": "null"}, {"instruction": ""}, {"instruction": "  \n "}):
        context, _ = prompt(tiny_data_dir, task, k, **metadata)
        assert context == body, metadata
        # Departure from the original, which renders '\n' + body (protocol.md §2.2).
        assert not context.startswith("\n")


def test_agnews_few_shot_verbatim(tiny_data_dir):
    """The protocol.md §2.2 shape, spelled out in one piece."""
    context, conts = prompt(tiny_data_dir, "agnews", 3, instruction="Classify.")
    assert context == (
        "Classify.\n\n"
        "News: Sprinter breaks the world record.\nCategory: Sports\n\n"
        "News: New chip doubles battery life.\nCategory: Sci/Tech\n\n"
        "News: Bank shares fall after rate rise.\nCategory: Business\n\n"
        "News: Fears for pension after talks.\nCategory:"
    )
    assert conts == [" World", " Sports", " Business", " Sci/Tech"]


@pytest.mark.parametrize("task", CHOICE_TASKS)
def test_context_plus_continuation_is_the_original_prompt(tiny_data_dir, task):
    """The original scores ``prompt + v`` where its prompt ends in ``"Field: "`` (protocol.md §2.1, §3.1)."""
    k, _rows, body, _block, continuations = GOLDEN[task]
    context, conts = prompt(tiny_data_dir, task, k, instruction="Classify.")
    original_prompt = "Classify.\n\n" + body + " "
    for cont in conts:
        assert cont.startswith(" ") and not cont.startswith("  ")
        assert context + cont == original_prompt + cont[1:]


def test_other_bank_entries(tiny_data_dir):
    context, _ = prompt(tiny_data_dir, "imdb", 0, method="generic", instruction_index=2)
    assert context == "Complete the problem.\n\nReview: An instant classic.\nSentiment:"
    context, _ = prompt(tiny_data_dir, "imdb", 0, method="generic", instruction_id="generic-4")
    assert context == "Complete the question below:\n\nReview: An instant classic.\nSentiment:"


# ------------------------------------------------------------------------------------ zero-shot

@pytest.mark.parametrize("task", TASKS)
def test_zero_shot(tiny_data_dir, task):
    _k, _rows, _body, block, continuations = GOLDEN[task]
    context, conts = prompt(tiny_data_dir, task, 0, instruction="Classify.")
    assert context == "Classify.\n\n" + block
    assert conts == continuations
    null_context, null_conts = prompt(tiny_data_dir, task, 0)
    assert null_context == block
    assert null_conts == continuations


# ------------------------------------------------------------------------------------ instruction text

INSTRUCTION_CASES = [
    # (instruction as given, what precedes the first block)
    ("Use {{ x }} and {% raw %}y{% endraw %} {# note #}", "Use {{ x }} and {% raw %}y{% endraw %} {# note #}\n\n"),
    ("{{ text }}", "{{ text }}\n\n"),  # neither rendered nor looked up as a field
    ("text", "text\n\n"),  # a doc field's name is not replaced by the field's value
    ("   Answer it.", "Answer it.\n\n"),  # leading whitespace dropped
    ("\n\t Answer it.", "Answer it.\n\n"),
    ("Answer it.  ", "Answer it.  \n\n"),  # trailing whitespace kept
    ("X\n", "X\n\n\n"),  # protocol.md §2.2: "X\n" renders as "X\n\n\n..."
    (":\n\nPick a ripe avocado.", ":\n\nPick a ripe avocado.\n\n"),  # the APE string keeps its ':'
]


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("instruction,prefix", INSTRUCTION_CASES)
def test_instruction_is_inserted_verbatim(tiny_data_dir, task, instruction, prefix):
    _k, _rows, _body, block, _conts = GOLDEN[task]
    context, _ = prompt(tiny_data_dir, task, 0, instruction=instruction)
    assert context == prefix + block


@pytest.mark.parametrize("task", ["agnews", "hellaswag", "triviaqa"])
def test_template_syntax_instruction_with_demos(tiny_data_dir, task):
    k, _rows, body, _block, _conts = GOLDEN[task]
    instruction = "{% raw %}{{ x }}{% endraw %}"
    context, _ = prompt(tiny_data_dir, task, k, instruction=instruction)
    assert context == "{% raw %}{{ x }}{% endraw %}\n\n" + body


def test_instruction_is_recorded_verbatim(tiny_data_dir):
    task_obj = build_task("agnews", {"data_dir": str(tiny_data_dir), "instruction": "  {{ x }} "}, 0)
    meta = task_obj.dump_config()["metadata"]
    assert meta["instruction_text"] == "  {{ x }} "
    assert meta["method"] == "literal"
    assert task_obj.config.description == "{{ x }} \n\n"


# ------------------------------------------------------------------------------------ per-task details

def test_hellaswag_keeps_raw_ctx_tags(tiny_data_dir):
    """Raw HF ``ctx``: no activity label, ``[header]``/``[step]`` tags kept (protocol.md §2.3)."""
    context, conts = prompt(tiny_data_dir, "hellaswag", 0, doc=3)
    assert context == "Sentence: [header] How to shave [title] Wet your face.\nAnswer:"
    assert conts == [" [step] Eat the razor.", " [step] Go outside.", " [step] Call a friend.", " [step] Apply shaving cream."]


def test_imdb_keeps_br_tags(tiny_data_dir):
    context, _ = prompt(tiny_data_dir, "imdb", 0, doc=3)
    assert context == "Review: A mess of a movie.<br />Skip it.\nSentiment:"


def test_mcq_choices_are_per_item(tiny_data_dir):
    _, conts = prompt(tiny_data_dir, "cosmosqa", 0, doc=3)
    assert conts == [" A holiday .", " A fire .", " A strike .", " Heavy snow ."]
    _, conts = prompt(tiny_data_dir, "hellaswag", 0, doc=7)
    assert conts == [" rides it.", " breaks it.", " hides it.", " sweeps the floor."]


@pytest.mark.parametrize(
    "task,doc,gold",
    [("agnews", 0, 2), ("anli", 1, 2), ("boolq", 0, 1), ("boolq", 1, 0), ("imdb", 1, 0), ("emotion", 3, 3),
     ("cosmosqa", 2, 2), ("hellaswag", 1, 1), ("hellaswag", 3, 3)],
)
def test_gold_index(tiny_data_dir, task, doc, gold):
    """BoolQ's bool and HellaSwag's string label become choice indices."""
    task_obj = build_task(task, {"data_dir": str(tiny_data_dir)}, 0)
    assert task_obj.doc_to_target(task_obj.eval_docs[doc]) == gold


@pytest.mark.parametrize(
    "task,doc,golds",
    [("nq_open", 1, ["Alexander Graham Bell", "Bell"]), ("triviaqa", 0, ["Chicago", "Chicago, Illinois"]),
     ("triviaqa", 6, ["China", "People's Republic of China"])],
)
def test_gqa_golds_are_all_answers(tiny_data_dir, task, doc, golds):
    task_obj = build_task(task, {"data_dir": str(tiny_data_dir)}, 0)
    assert list(task_obj.doc_to_target(task_obj.eval_docs[doc])) == golds


@pytest.mark.parametrize("task", GQA_TASKS)
def test_gqa_generation_request(tiny_data_dir, task):
    """Greedy, at most 10 new tokens, stop at the end of the line (protocol.md §3.2)."""
    task_obj = build_task(task, {"data_dir": str(tiny_data_dir)}, 0)
    doc = task_obj.eval_docs[0]
    ctx = task_obj.fewshot_context(doc, 0)
    request = task_obj.construct_requests(doc, ctx, metadata=(task_obj.config.task, 0, 1))
    requests = request if isinstance(request, list) else [request]
    assert len(requests) == 1
    context, gen_kwargs = requests[0].arguments
    assert context == GOLDEN[task][3]
    assert gen_kwargs["until"] == ["\n"]
    assert gen_kwargs["max_gen_toks"] == 10
    assert gen_kwargs.get("do_sample") is False


@pytest.mark.parametrize("task", TASKS)
def test_other_eval_docs_share_the_demos(tiny_data_dir, task):
    k, _rows, body, block, _conts = GOLDEN[task]
    demos = body[: len(body) - len(block)]
    task_obj = build_task(task, {"data_dir": str(tiny_data_dir)}, k)
    for doc in range(len(task_obj.eval_docs)):
        context, _ = render_prompt(task_obj, doc)
        assert context.startswith(demos)
        assert context != demos


def test_gqa_demo_with_a_digit_answer(tiny_data_dir):
    """A gold like "100" is shown as text, not taken as a choice index."""
    assert random.Random(7).sample(range(12), 2) == [5, 2]
    context, conts = prompt(tiny_data_dir, "nq_open", 2, doc=5, demo_seed=7)
    assert context == (
        "Question: what is the boiling point of water in celsius\nAnswer: 100\n\n"
        "Question: how many legs does a spider have\nAnswer: eight\n\n"
        "Question: what is the smallest prime number\nAnswer:"
    )
    assert conts == []


def test_template_syntax_in_the_data_is_not_rendered(tiny_rows, tiny_data_copy):
    import json

    data = tiny_data_copy
    rows = [dict(r) for r in tiny_rows["ag_news"]["eval"]]
    rows[0]["text"] = "Use {{ text }} and {% if x %}y{% endif %} here."
    (data / "ag_news" / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    context, _ = prompt(data, "agnews", 0, instruction="{{ label }}")
    assert context == "{{ label }}\n\nNews: Use {{ text }} and {% if x %}y{% endif %} here.\nCategory:"


def test_system_instruction_with_an_instruction(tiny_data_dir):
    task_obj = build_task("agnews", {"data_dir": str(tiny_data_dir), "instruction": "Classify."}, 0)
    context = task_obj.fewshot_context(task_obj.eval_docs[0], 0, system_instruction="Be brief.")
    assert context == "Be brief.\n\nClassify.\n\nNews: Fears for pension after talks.\nCategory:"


@pytest.mark.parametrize("k", [0, 3])
def test_system_instruction_with_the_null_instruction(tiny_data_dir, k):
    task_obj = build_task("agnews", {"data_dir": str(tiny_data_dir)}, k)
    context = task_obj.fewshot_context(task_obj.eval_docs[0], k, system_instruction="Be brief.")
    assert context == "Be brief.\n\n" + GOLDEN["agnews"][2 if k else 3]
