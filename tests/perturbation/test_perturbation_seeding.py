"""Seeding: per-document/per-field string seeds, and the single-stream parity mode."""

from __future__ import annotations

import random

import pytest

from instructeval_tasks.perturbation import mild_mix, perturb_fields, perturb_rng, perturb_stream, seed_string

SENTENCE_A = "Already, the new product is not available."
SENTENCE_B = "It is a very good movie, and I am not sure what they were thinking."
LONG = (
    "They were thinking about the new product and the old one, and I am not sure that it is available. "
    "The movie was received from the record producer every time they were there."
)


def _docs(count: int) -> list[dict[str, object]]:
    return [{"premise": f"{LONG} Item {i}.", "hypothesis": f"{SENTENCE_B} ({i})", "label": i % 3} for i in range(count)]


# --- the seed string ---


def test_seed_string_format_is_exact() -> None:
    assert seed_string(0, "validation:42", "premise") == "instructeval-mild-mix:0:validation:42:premise"
    assert seed_string("3", "k", "text") == "instructeval-mild-mix:3:k:text"


def test_perturb_rng_is_random_seeded_with_the_documented_string() -> None:
    expected = random.Random("instructeval-mild-mix:5:test:17:question")
    rng = perturb_rng(5, "test:17", "question")
    assert isinstance(rng, random.Random)
    assert [rng.random() for _ in range(5)] == [expected.random() for _ in range(5)]


def test_int_and_str_seed_give_the_same_stream() -> None:
    assert perturb_rng(0, "d", "f").getstate() == perturb_rng("0", "d", "f").getstate()


@pytest.mark.parametrize(("seed", "field"), [("a:b", "text"), (0, "te:xt")])
def test_colon_in_seed_or_field_is_rejected(seed: int | str, field: str) -> None:
    # Keeps (seed, doc_key, field) -> seed string injective; doc_key may hold colons.
    with pytest.raises(ValueError):
        perturb_rng(seed, "doc", field)


# --- per-document, per-field determinism ---


def test_same_key_same_output_regardless_of_call_order() -> None:
    docs = _docs(12)
    keys = [f"test:{i}" for i in range(len(docs))]
    fields = ["premise", "hypothesis"]
    forward = [perturb_fields(d, fields, seed=0, doc_key=k) for d, k in zip(docs, keys)]
    backward = [perturb_fields(d, fields, seed=0, doc_key=k) for d, k in reversed(list(zip(docs, keys)))][::-1]
    shuffled_order = list(range(len(docs)))
    random.Random(1).shuffle(shuffled_order)
    shuffled = {i: perturb_fields(docs[i], fields, seed=0, doc_key=keys[i]) for i in shuffled_order}
    assert forward == backward == [shuffled[i] for i in range(len(docs))]


def test_fields_are_independent_of_field_order_and_selection() -> None:
    doc = _docs(1)[0]
    both = perturb_fields(doc, ["premise", "hypothesis"], seed=0, doc_key="k")
    reordered = perturb_fields(doc, ["hypothesis", "premise"], seed=0, doc_key="k")
    alone = perturb_fields(doc, ["hypothesis"], seed=0, doc_key="k")
    assert both == reordered
    assert alone == {"hypothesis": both["hypothesis"]}


def test_perturb_fields_uses_perturb_rng_per_field() -> None:
    doc = {"text": LONG}
    assert perturb_fields(doc, ["text"], seed=7, doc_key="train:3") == {
        "text": mild_mix(LONG, perturb_rng(7, "train:3", "text"))
    }


def test_different_doc_keys_give_independent_streams() -> None:
    # The same text under different keys must not be perturbed identically.
    doc = {"text": LONG}
    outputs = {perturb_fields(doc, ["text"], seed=0, doc_key=f"test:{i}")["text"] for i in range(20)}
    assert len(outputs) == 20
    firsts = {perturb_rng(0, f"test:{i}", "text").random() for i in range(100)}
    assert len(firsts) == 100


def test_different_seeds_and_fields_give_different_streams() -> None:
    assert perturb_rng(0, "k", "text").random() != perturb_rng(1, "k", "text").random()
    assert perturb_rng(0, "k", "text").random() != perturb_rng(0, "k", "question").random()


def test_perturb_fields_does_not_modify_doc_and_returns_only_fields() -> None:
    doc = {"text": SENTENCE_A, "label": 2}
    snapshot = dict(doc)
    out = perturb_fields(doc, ["text"], seed=0, doc_key="k")
    assert doc == snapshot
    assert set(out) == {"text"}
    assert out["text"] != SENTENCE_A


def test_perturb_fields_errors() -> None:
    with pytest.raises(KeyError):
        perturb_fields({"text": "x"}, ["question"], seed=0, doc_key="k")
    with pytest.raises(TypeError):
        perturb_fields({"text": None}, ["text"], seed=0, doc_key="k")


def test_empty_and_non_ascii_fields() -> None:
    out = perturb_fields({"a": "", "b": "Ünïcödé  Crèche 日本語"}, ["a", "b"], seed=0, doc_key="k")
    assert out["a"] == ""
    assert " ".join(out["b"].split()) in {"ünïcödé crèche 日本語", "ünïcödé creche 日本語"}


# --- single-stream parity mode (the original InstructEval) ---


def test_stream_reproduces_the_note_sequential_goldens() -> None:
    out = perturb_stream([{"text": SENTENCE_A}, {"text": SENTENCE_B}], ["text"], seed=0)
    assert out == [
        {"text": "already,   the  new  product  isn't  available."},
        {"text": "it's   a   very   good movie,  and i'm   not sure   what  htey  were   thinking."},
    ]


def test_stream_consumes_fields_in_order_within_a_doc() -> None:
    # Same two strings as two fields of ONE doc: identical to the two-doc stream.
    out = perturb_stream([{"premise": SENTENCE_A, "hypothesis": SENTENCE_B}], ["premise", "hypothesis"])
    assert out == [
        {
            "premise": "already,   the  new  product  isn't  available.",
            "hypothesis": "it's   a   very   good movie,  and i'm   not sure   what  htey  were   thinking.",
        }
    ]


def test_stream_default_seed_is_integer_zero() -> None:
    docs = _docs(5)
    rng = random.Random(0)
    expected = [{f: mild_mix(str(d[f]), rng) for f in ("premise", "hypothesis")} for d in docs]
    assert perturb_stream(docs, ["premise", "hypothesis"]) == expected
    # Random("0") (a str seed) is a different stream; the parity mode must not use it.
    str_rng = random.Random("0")
    assert perturb_stream(docs, ["premise"]) != [{"premise": mild_mix(str(d["premise"]), str_rng)} for d in docs]


def test_stream_is_order_dependent_unlike_per_document_mode() -> None:
    docs = _docs(6)
    forward = perturb_stream(docs, ["premise"])
    backward = perturb_stream(docs[::-1], ["premise"])[::-1]
    assert forward != backward


def test_stream_empty_inputs() -> None:
    assert perturb_stream([], ["text"]) == []
    assert perturb_stream([{"text": ""}], ["text"]) == [{"text": ""}]
