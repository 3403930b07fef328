"""Each ``mild_mix`` step alone: lowercase, match_case, contraction, misspelling, space."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

import pytest

from instructeval_tasks.perturbation import (
    CONTRACTION_MAP,
    REVERSE_CONTRACTION_MAP,
    contract,
    load_misspellings,
    lowercase,
    match_case,
    misspell,
    space,
)

# --- lowercase ---


def test_lowercase_is_str_lower_and_draws_nothing() -> None:
    rng = random.Random(1)
    state = rng.getstate()
    assert lowercase("ÀB Ça VA?\tOK", rng) == "àb ça va?\tok"
    assert lowercase("") == ""
    assert rng.getstate() == state


# --- match_case ---


@pytest.mark.parametrize(
    ("source", "target", "expected"),
    [
        ("already", "ALREAYD", "alreayd"),  # rule 1: all lower
        ("", "MiXeD", "mixed"),  # rule 1: all([]) is true
        ("NASA", "nasa", "NASA"),  # rule 2: all upper
        ("Already", "aLREAYD", "Alreayd"),  # rule 3: capitalize() lowercases the rest
        ("Carnegie-Mellon", "Carnagie-Mellon", "Carnagie-mellon"),  # "-" fails rules 1-2
        ("is not", "ISN'T", "ISN'T"),  # space fails rules 1-2, no capital: unchanged
        ("i'm", "I'M", "I'M"),  # apostrophe fails rule 1
        ("1990s", "1990S", "1990S"),  # digits are neither lower nor upper
        ("Éa", "xyz", "Xyz"),  # non-ASCII capital
    ],
)
def test_match_case_rules(source: str, target: str, expected: str) -> None:
    assert match_case(source, target) == expected


# --- contraction ---


def test_contraction_map_sizes_and_last_wins() -> None:
    assert len(CONTRACTION_MAP) == 77
    assert len(REVERSE_CONTRACTION_MAP) == 76
    assert [c for c, e in CONTRACTION_MAP.items() if e == "is not"] == ["ain't", "isn't"]
    assert REVERSE_CONTRACTION_MAP["is not"] == "isn't"  # last contraction wins ...
    assert next(iter(REVERSE_CONTRACTION_MAP)) == "is not"  # ... at the first key position
    assert list(CONTRACTION_MAP)[:3] == ["ain't", "aren't", "can't"]
    assert list(CONTRACTION_MAP)[-1] == "you've"


def test_contraction_maps_are_read_only() -> None:
    with pytest.raises(TypeError):
        CONTRACTION_MAP["x"] = "y"  # type: ignore[index]
    with pytest.raises(TypeError):
        REVERSE_CONTRACTION_MAP["x"] = "y"  # type: ignore[index]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("is not ", "isn't "),
        ("is not.", "is not."),  # needs a following space
        ("is not", "is not"),  # end of text: no space
        ("is not\nhere", "is not\nhere"),  # a newline is not the required space
        ("cannot have it", "can't have it"),  # "cannot" precedes "cannot have"
        ("he would have gone", "he'd have gone"),
        ("you would have gone", "you'd have gone"),
        ("how do you do", "how'd'y do"),
        ("madam i", "ma'am i"),
        ("that is not bad", "that's not bad"),  # leftmost match wins, "not" left alone
        ("I am here", "I'm here"),  # both "I am" and "i am" exist
        ("i am here", "i'm here"),
        ("She is here", "She's here"),  # IGNORECASE match + match_case capitalises
        ("SHE IS here", "She's here"),  # "SHE IS" has a space: rule 3, capitalize
        ("thesis not ", "thesis not "),  # \b: "is" inside "thesis" does not match
        ("it is  not", "it's  not"),  # the one consumed space is put back
        ("", ""),
    ],
)
def test_contract_cases(text: str, expected: str) -> None:
    assert contract(text) == expected


def test_contract_draws_nothing() -> None:
    rng = random.Random(3)
    state = rng.getstate()
    contract("it is not what i am ", rng)
    assert rng.getstate() == state


# --- misspelling ---


class ScriptedRandom(random.Random):
    """A Random whose ``random()`` values are scripted and whose calls are recorded."""

    def __init__(self, values: Sequence[float]) -> None:
        super().__init__(0)
        self.values = list(values)
        self.random_calls = 0
        self.choices: list[Sequence[Any]] = []

    def random(self) -> float:
        self.random_calls += 1
        return self.values.pop(0)

    def choice(self, seq: Sequence[Any]) -> Any:
        self.choices.append(seq)
        return seq[-1]


def test_misspelling_probability_is_strict_less_than() -> None:
    rng = ScriptedRandom([0.1, 0.0999999, 0.5])
    # "already" -> ('aready', 'alreayd', 'allready'); the scripted choice takes the last.
    assert misspell("already already already", rng, prob=0.1) == "already allready already"
    assert rng.random_calls == 3  # one random() per dictionary match
    assert rng.choices == [("aready", "alreayd", "allready")]  # one choice() per hit only


def test_misspelling_draws_only_for_dictionary_matches() -> None:
    rng = ScriptedRandom([0.9, 0.9])
    assert misspell("zxq the blorp they zzt", rng, prob=0.1) == "zxq the blorp they zzt"
    assert rng.random_calls == 2
    assert rng.choices == []


def test_misspelling_rng_consumption_matches_helm_call_sequence() -> None:
    # Replays the exact draw sequence (random() per match, choice() per hit) on a twin RNG.
    table = load_misspellings()
    text = "they were thinking about the new product and the old one"
    words = re.findall(r"\b(they|were|thinking|about|the|new|product|and|old|one)\b", text)
    for seed in range(50):
        twin = random.Random(seed)
        expected = []
        for word in words:
            if word in table and twin.random() < 0.3:
                expected.append(str(twin.choice(table[word])))
            else:
                expected.append(word)
        rng = random.Random(seed)
        assert misspell(text, rng, prob=0.3) == " ".join(expected)
        assert rng.getstate() == twin.getstate()


def test_misspelling_prob_zero_is_identity_but_still_draws() -> None:
    rng = random.Random(5)
    assert misspell("already the new product and", rng, prob=0.0) == "already the new product and"
    twin = random.Random(5)
    for _ in range(3):  # "already", "the", "and" are keys; "new" and "product" are not
        twin.random()
    assert rng.getstate() == twin.getstate()
    assert "new" not in load_misspellings() and "product" not in load_misspellings()


def test_misspelling_prob_one_replaces_every_match_from_its_list() -> None:
    table = load_misspellings()
    out = misspell("the they about", random.Random(11), prob=1.0).split()
    assert out[0] in table["the"] and out[1] in table["they"] and out[2] in table["about"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("enlist", {"enlish"}),  # variant "Enlish" lowercased by match_case rule 1
        ("Coca-Cola", {"Coca cola"}),  # variant "Coca Cola", rule 3: capitalize()
        ("UnitedStates", {"Unitesstates"}),  # rule 3 on a mixed-case key
        ("crèche", {"creche"}),  # non-ASCII key, Unicode \b
        ("every time", {"everytime"}),  # "every time" precedes "every" in file order
        ("record producer", {"recordproducer"}),
        ("about a", {"boaut a", "baout a", "abbout a", "abotu a"}),  # "about" shadows "about a"
        ("that's", {v + "'s" for v in load_misspellings()["that"]}),  # "that" matches inside "that's"
    ],
)
def test_misspelling_first_match_order_and_match_case(text: str, expected: set[str]) -> None:
    outs = {misspell(text, random.Random(seed), prob=1.0) for seed in range(200)}
    assert outs == expected


def test_misspelling_is_case_sensitive() -> None:
    # No IGNORECASE: "ALREADY" is not a key (only "already" and "Already" are).
    assert misspell("ALREADY aLREADY", random.Random(0), prob=1.0) == "ALREADY aLREADY"


# --- space ---


def test_space_run_lengths_are_one_to_three_and_all_occur() -> None:
    text = "a b  c   d    e" + " f" * 200
    lengths: set[int] = set()
    for seed in range(20):
        out = space(text, random.Random(seed))
        assert re.sub(" +", " ", out) == re.sub(" +", " ", text)  # words never merged or split
        lengths |= {len(run) for run in re.findall(" +", out)}
    assert lengths == {1, 2, 3}


def test_space_draws_one_randint_per_run_left_to_right() -> None:
    text = "a     b c  d"  # three runs, the first of five spaces
    twin = random.Random("id0")
    expected_runs = [twin.randint(1, 3) for _ in range(3)]
    rng = random.Random("id0")
    out = space(text, rng)
    assert [len(run) for run in re.findall(" +", out)] == expected_runs
    assert rng.getstate() == twin.getstate()


def test_space_leaves_tabs_and_newlines() -> None:
    rng = random.Random(0)
    state = rng.getstate()
    assert space("a\tb\nc\u00a0d", rng) == "a\tb\nc\u00a0d"  # no ASCII space: no draw
    assert rng.getstate() == state


def test_space_max_spaces_parameter() -> None:
    out = space("a b c d e f g h", random.Random(2), max_spaces=1)
    assert out == "a b c d e f g h"
