"""Layered bank loading, candidate pools, seeded train slices and demonstration pairs (no model)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from instructeval_banks import (
    BANKS_DIR,
    BankError,
    join_bank_dirs,
    load_bank,
    load_banks,
    load_layered_bank,
)
from instructeval_tasks.induce.common import (
    InduceError,
    answer_text,
    candidate_pool,
    demo_set_ids,
    exec_slice_ids,
    input_text,
    load_train_rows,
    make_task,
    perplexity_input_ids,
    write_rows_dir,
)
from instructeval_tasks.specs import get_spec


def _bank(root: Path, name: str, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{name}.yaml").write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def layers(tmp_path):
    """Two extra bank dirs: one replaces shipped 'generic' for agnews, both add per-model 'lowppl' banks."""
    one = _bank(tmp_path / "one", "generic_agnews", (
        "method: generic\ntasks: [agnews]\nprovenance: {source: test}\nentries:\n  - {id: g-own-0, text: Own generic.}\n"))
    _bank(one, "lp_a", (
        "method: lowppl\ntasks: [agnews]\nmodel: mA\nprovenance: {source: test}\n"
        "entries:\n  - {id: lp-mA-0, text: From A.}\n  - {id: shared-id, text: Shared A.}\n"))
    two = _bank(tmp_path / "two", "lp_b", (
        "method: lowppl\ntasks: [agnews]\nmodel: mB\nprovenance: {source: test}\n"
        "entries:\n  - {id: lp-mB-0, text: From B.}\n  - {id: shared-id, text: Shared B.}\n"))
    return one, two


def test_layering_keeps_the_shipped_banks_and_upper_layers_win(layers):
    """Extra dirs add methods and replace (method, task, model) banks; everything else stays shipped."""
    one, two = layers
    bank = load_layered_bank([one, two])
    assert bank.entries("null", "agnews")[0].text == ""  # shipped
    assert [e.id for e in bank.entries("generic", "agnews")] == ["g-own-0"]  # replaced for agnews only
    assert bank.entries("generic", "imdb")[0].id == "generic-0"  # shipped for other tasks
    assert bank.entries("lowppl", "agnews", "mA")[0].text == "From A."
    assert bank.entries("lowppl", "agnews", "mB")[0].text == "From B."
    assert bank.root_of("generic", "agnews") == one.resolve()
    assert bank.root_of("null", "agnews") == BANKS_DIR.resolve()
    assert bank.root_of("lowppl", "agnews", "mB") == two.resolve()
    # one string of several directories (the metadata form) gives the same bank
    joined = join_bank_dirs([one, two])
    assert joined == f"{one.resolve()}{os.pathsep}{two.resolve()}"
    assert load_layered_bank(joined).entries_by_key.keys() == bank.entries_by_key.keys()
    # unchanged single-directory behaviour
    assert load_bank(None) is load_banks([None]) is load_layered_bank(None)
    assert set(load_bank(one).methods()) == {"generic", "lowppl"}


def test_entry_ids_resolve_across_model_banks_and_ambiguity_is_an_error(layers):
    """A task resolves per-model entries by id without naming the model; a shared id must name it."""
    bank = load_layered_bank(list(layers))
    assert bank.entry("lowppl", "agnews", entry_id="lp-mB-0").text == "From B."
    assert bank.entry("lowppl", "agnews", entry_id="lp-mA-0").model == "mA"
    with pytest.raises(BankError, match="several models"):
        bank.entry("lowppl", "agnews", entry_id="shared-id")
    assert bank.entry("lowppl", "agnews", entry_id="shared-id", model="mB").text == "Shared B."
    with pytest.raises(BankError, match="model-specific"):
        bank.entries("lowppl", "agnews", "mC")


def test_candidate_pool_default_methods_dirs_and_dedup(layers, tmp_path):
    pool = candidate_pool("agnews", None)
    shipped = load_bank()
    expected = [e.id for e in shipped.entries("adhoc", "agnews")] + [e.id for e in shipped.entries("promptsource", "agnews")]
    assert [e.id for e in pool] == expected
    assert {e.method for e in pool} == {"adhoc", "promptsource"}
    one, _two = layers
    # a bank directory contributes its methods for the task (per-model banks of this model only)
    from_dir = candidate_pool("agnews", [str(one)], model_label="mA")
    assert [e.id for e in from_dir] == ["g-own-0", "lp-mA-0", "shared-id"]
    # bank_dir layering applies to method names; duplicates (case/whitespace) are dropped
    dup = _bank(tmp_path / "dup", "d", (
        "method: mine\ntasks: [agnews]\nprovenance: {source: test}\n"
        "entries:\n  - {id: a, text: Own generic.}\n  - {id: b, text: Fresh one.}\n"))
    pool = candidate_pool("agnews", "generic,mine", bank_dir=[one, dup])
    assert [e.id for e in pool] == ["g-own-0", "b"]
    with pytest.raises(InduceError, match="nosuch"):
        candidate_pool("agnews", "nosuch")


def test_train_slices_are_seeded_balanced_and_disjoint(tiny_data_dir):
    spec = get_spec("agnews")
    rows, source = load_train_rows(spec, tiny_data_dir)
    assert source.endswith("ag_news/train.jsonl") and len(rows) == 12
    held = exec_slice_ids(spec, rows, 4, 0)
    assert held == exec_slice_ids(spec, rows, 4, 0) and held != exec_slice_ids(spec, rows, 4, 1)
    assert sorted(rows[i]["label"] for i in held) == [0, 1, 2, 3]  # class-balanced
    sets = demo_set_ids(spec, rows, n_sets=3, n_demos=4, seed=0, exclude=held)
    assert len(sets) == 3 and all(len(s) == 4 for s in sets)
    assert not set(held) & {i for s in sets for i in s}
    assert sets != [sets[0]] * 3  # each set has its own seed
    assert perplexity_input_ids(spec, rows, 4, 0) == perplexity_input_ids(spec, rows, 4, 0)
    with pytest.raises(InduceError, match="cannot draw 40 rows"):
        exec_slice_ids(spec, rows, 40, 0)


@pytest.mark.parametrize(
    "task,local,index,expected",
    [
        ("agnews", "ag_news", 2, ("Oil prices climb on supply fears.", "Business")),
        ("anli", "anli", 1, ("Premise: The cat sleeps on the warm mat.\nHypothesis: The cat is awake.", "Contradict")),
        ("hellaswag", "hellaswag", 1, ("A woman ties her shoes at the track. she", "starts running around the track.")),
        ("cosmosqa", "cosmos_qa", 0, ("Passage: I missed the bus , so I walked to work in the rain .\n"
                                      "Question: Why did I walk to work ?", "I missed the bus .")),
        ("nq_open", "nq_open", 1, ("who wrote hamlet", "William Shakespeare")),
        ("triviaqa", "trivia_qa", 0, ("Which planet is known as the Red Planet?", "Mars")),
        ("boolq", "boolq", 1, ("Passage: Whales are marine mammals that breathe air.\nQuestion: is a whale a fish", "False")),
    ],
)
def test_demonstration_pairs(tmp_path, tiny_rows, task, local, index, expected):
    """Input = the test block without its answer cue (a lone field loses its label); output = the gold answer."""
    spec = get_spec(task)
    rows = tiny_rows[local]["train"]
    view = make_task(spec, data_dir=write_rows_dir(tmp_path, spec, rows), name=f"{spec.task_name}__view")
    assert (input_text(view, spec, rows[index]), answer_text(view, rows[index])) == expected
