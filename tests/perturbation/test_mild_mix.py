"""Goldens and properties of ``mild_mix`` (perturbations.md §5).

Every golden here was produced by HELM's own ``MildMixPerturbation`` (or is one
of HELM's unit-test fixtures). Whitespace inside the strings is significant.
"""

from __future__ import annotations

import doctest
import importlib
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from instructeval_tasks.perturbation import contract, lowercase, mild_mix, misspell, space

REPO_ROOT = Path(__file__).resolve().parents[2]

FULL_INPUT = (
    "Already, the new product is not available. It is a very good movie, and I am not sure what they were thinking."
)
SENTENCE_A = "Already, the new product is not available."
SENTENCE_B = "It is a very good movie, and I am not sure what they were thinking."


# --- §5 goldens: HELM per-instance seeding (Random(instance.id) / Random(str(seed) + id)) ---


@pytest.mark.parametrize(
    ("seed", "expected"),
    [
        (
            "id0",
            "already,  the new  product isn't   available.  it's   a   very   good   movie, andd  i'm  not  sure "
            "what they were   thinking.",
        ),
        (
            "1id0",
            "already, tjhe  new product   isn't  available. it's  a   very good   movie, and  i'm not   sure   "
            "what  they   were   thinking.",
        ),
    ],
)
def test_helm_per_instance_goldens(seed: str, expected: str) -> None:
    assert mild_mix(FULL_INPUT, random.Random(seed)) == expected


# --- §5 goldens: InstructEval single stream ---


def test_instructeval_single_stream_golden_a_then_b() -> None:
    rng = random.Random(0)
    assert mild_mix(SENTENCE_A, rng) == "already,   the  new  product  isn't  available."
    assert mild_mix(SENTENCE_B, rng) == (
        "it's   a   very   good movie,  and i'm   not sure   what  htey  were   thinking."
    )


def test_sentence_b_alone_shows_order_dependence() -> None:
    alone = mild_mix(SENTENCE_B, random.Random(0))
    assert alone == "it's  a  very  good   movie, and   i'm not  sure what they   were  thinking."
    rng = random.Random(0)
    mild_mix(SENTENCE_A, rng)
    assert mild_mix(SENTENCE_B, rng) != alone


def test_contraction_edge_case_golden() -> None:
    text = "How do you do? That is not what I am saying, madam. He would have known."
    expected = "how'd'y  do?   that's  not   what  i'm  saying, madam.  he'd  have   known."
    assert mild_mix(text, random.Random("x")) == expected


# --- §5 single-step goldens (HELM's test_perturbation.py fixtures) ---


def test_misspelling_step_golden() -> None:
    text = "Already, the new product is not available."
    assert misspell(text, random.Random("id0"), prob=1.0) == "Alreayd, hten new product is nto avaliable."


def test_space_step_golden() -> None:
    text = "Hello World!\nQuite a day, huh?"
    assert space(text, random.Random("id0"), max_spaces=3) == "Hello   World!\nQuite a  day,   huh?"


def test_lowercase_step_golden() -> None:
    assert lowercase("Hello World!\nQuite a day, huh?") == "hello world!\nquite a day, huh?"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("She is a doctor, and I am a student", "She's a doctor, and I'm a student"),
        (
            "you would have known, cannot have, i would have, madam i am here",
            "you'd have known, can't have, i'd have, ma'am i'm here",
        ),
    ],
)
def test_contraction_step_goldens(text: str, expected: str) -> None:
    assert contract(text) == expected


# --- composition order ---


def test_mild_mix_is_the_four_steps_in_helm_order_on_one_rng() -> None:
    for seed in ("id0", "1id0", "x", 0, 7):
        manual_rng = random.Random(seed)
        text = lowercase(FULL_INPUT, manual_rng)
        text = contract(text, manual_rng)
        text = misspell(text, manual_rng, prob=0.1)
        text = space(text, manual_rng, max_spaces=3)
        assert mild_mix(FULL_INPUT, random.Random(seed)) == text


def test_lowercase_runs_before_misspelling() -> None:
    # "The" is itself a key, so misspelling first would consume draws on it and could
    # keep capitals; HELM lowercases first, so only lowercase variants can appear.
    out = mild_mix("THE THE THE THE THE THE THE THE THE THE THE THE", random.Random("id0"))
    assert out == out.lower()
    assert set(out.split()) - {"the"}, "expected at least one misspelt 'the' with this seed"


def test_contraction_runs_before_misspelling() -> None:
    # "isn't" is itself a dictionary key; it can only appear (and be misspelt) if the
    # contraction step ran first and produced it from "is not ".
    tokens = {token for seed in range(30) for token in mild_mix("is not " * 40, random.Random(seed)).split()}
    assert "isn't" in tokens
    assert "is" not in tokens and "not" not in tokens
    assert tokens - {"isn't"}, "some 'isn't' should have been misspelt at prob 0.1"


# --- §5 property tests ---


def _random_texts(count: int) -> list[str]:
    words = [
        "Already", "the", "NEW", "product", "is", "not", "available.", "It", "I", "am", "They", "were",
        "thinking", "Crèche", "naïve", "日本語", "über", "\n", "\t", "that's", "ABOUT", "a", "lot",
    ]  # fmt: skip
    gen = random.Random(99)
    return [
        "".join(gen.choice(words) + gen.choice([" ", "  ", "", ", ", "\n", "   "]) for _ in range(gen.randint(0, 30)))
        for _ in range(count)
    ]


def test_output_is_its_own_lowercase() -> None:
    for index, text in enumerate(_random_texts(300)):
        out = mild_mix(text, random.Random(index))
        assert out == out.lower()


def test_text_without_dictionary_words_changes_only_space_runs() -> None:
    # Lowercase, no misspelling-list word and no contractible expansion: only space run
    # lengths may change, each to 1..3.
    text = "zxq   qwv. blorp  fnord\nvlim\tgrak  zzt"
    out = mild_mix(text, random.Random("id0"))
    assert re.sub(" +", " ", out) == re.sub(" +", " ", text)
    assert {len(run) for run in re.findall(" +", out)} <= {1, 2, 3}


def test_empty_string() -> None:
    rng = random.Random("id0")
    state = rng.getstate()
    assert mild_mix("", rng) == ""
    assert rng.getstate() == state, "empty input must consume no randomness"


def test_non_ascii_text() -> None:
    # Unicode lowercasing and Unicode \b: "Crèche" lowercases to the key "crèche",
    # whose only variant is "creche"; "ÉTÉ" has no key and is just lowercased.
    text = "ÉTÉ Crèche"
    outs = {mild_mix(text, random.Random(seed)) for seed in range(200)}
    normalised = {re.sub(" +", " ", out) for out in outs}
    assert normalised == {"été crèche", "été creche"}


def test_non_ascii_word_does_not_create_false_word_boundary() -> None:
    # With a Unicode \b, "the" inside "théthe" is not a separate word (é is a word char).
    assert misspell("théthe", random.Random(0), prob=1.0) == "théthe"


# --- docstring examples are real and pass ---

MODULES = [
    "instructeval_tasks.perturbation",
    "instructeval_tasks.perturbation.match_case",
    "instructeval_tasks.perturbation.lowercase",
    "instructeval_tasks.perturbation.contraction",
    "instructeval_tasks.perturbation.misspelling",
    "instructeval_tasks.perturbation.space",
    "instructeval_tasks.perturbation.mild_mix",
    "instructeval_tasks.perturbation.seeding",
]


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name: str) -> None:
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL)
    assert result.attempted > 0, f"{module_name} has no docstring example"
    assert result.failed == 0


# --- the package is light: no heavy imports, lazy data ---


def test_import_is_light_and_lazy() -> None:
    probe = (
        "import json, sys, time\n"
        "t = time.perf_counter()\n"
        "import instructeval_tasks.perturbation as p\n"
        "elapsed = time.perf_counter() - t\n"
        "heavy_names = ('torch', 'datasets', 'lm_eval', 'numpy', 'helm', 'transformers')\n"
        "heavy = sorted(m for m in heavy_names if m in sys.modules)\n"
        "print(json.dumps({'elapsed': elapsed, 'heavy': heavy,\n"
        "                  'loaded': p.load_misspellings.cache_info().currsize}))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    report = json.loads(completed.stdout)
    assert report["heavy"] == []
    assert report["loaded"] == 0, "the misspelling list must be loaded lazily, not at import"
    assert report["elapsed"] < 0.5
