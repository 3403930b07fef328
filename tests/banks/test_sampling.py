"""sample_entries: seeded, in bank order, keyed by (method, task, seed), independent of other methods."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from instructeval_banks import BankEntry, BankError, load_bank, load_bank_dir, sample_entries, sample_record


def entries(method: str, task: str, n: int) -> list[BankEntry]:
    return [BankEntry(f"{method}-{i}", f"Instruction {i}.", method, task, i) for i in range(n)]


def test_pinned_draws_of_the_shipped_adhoc_bank():
    bank = load_bank().entries("adhoc", "agnews")
    assert [e.id for e in sample_entries(bank, 5, 0)] == [
        "adhoc-agnews-04", "adhoc-agnews-08", "adhoc-agnews-17", "adhoc-agnews-32", "adhoc-agnews-38"]
    assert [e.id for e in sample_entries(bank, 5, 1)] == [
        "adhoc-agnews-11", "adhoc-agnews-17", "adhoc-agnews-18", "adhoc-agnews-27", "adhoc-agnews-30"]


def test_the_documented_algorithm():
    pool = entries("adhoc", "imdb", 40)
    for seed in range(5):
        rng = random.Random(f"instructeval-bank:adhoc:imdb:{seed}")
        expected = sorted(rng.sample(range(40), 5))
        assert [e.index for e in sample_entries(pool, 5, seed)] == expected


def test_deterministic_and_seed_dependent():
    pool = entries("adhoc", "anli", 40)
    assert sample_entries(pool, 5, 3) == sample_entries(list(pool), 5, 3)
    draws = {tuple(e.id for e in sample_entries(pool, 5, s)) for s in range(10)}
    assert len(draws) == 10


def test_the_same_across_processes():
    code = (
        "from instructeval_banks import load_bank, sample_entries;"
        "print(','.join(e.id for e in sample_entries(load_bank().entries('adhoc', 'boolq'), 5, 7)))"
    )
    outputs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={"PYTHONHASHSEED": str(h), "PATH": ""}).stdout.strip()
        for h in (0, 1)
    }
    assert outputs == {",".join(e.id for e in sample_entries(load_bank().entries("adhoc", "boolq"), 5, 7))}


def test_bank_order_and_n_at_least_the_size():
    pool = entries("promptsource", "agnews", 5)
    assert sample_entries(pool, 5, 0) == pool
    assert sample_entries(pool, 9, 123) == pool
    null = load_bank().entries("null", "agnews")
    assert sample_entries(null, 5, 0) == null
    drawn = sample_entries(entries("adhoc", "agnews", 40), 7, 2)
    assert [e.index for e in drawn] == sorted(e.index for e in drawn) and len(drawn) == 7


def test_independent_of_other_methods_and_tasks(tmp_path):
    def bank_with(other_size: int):
        root = tmp_path / f"bank{other_size}"
        root.mkdir()
        lines = "".join(f"  - {{id: a{i}, text: 'A {i}'}}\n" for i in range(20))
        (root / "a.yaml").write_text(f"method: alpha\ntasks: [agnews, imdb]\nprovenance: {{source: t}}\nentries:\n{lines}")
        other = "".join(f"  - {{id: b{i}, text: 'B {i}'}}\n" for i in range(other_size))
        (root / "b.yaml").write_text(f"method: beta\ntasks: [agnews]\nprovenance: {{source: t}}\nentries:\n{other}")
        return load_bank_dir(root)

    small, large = bank_with(6), bank_with(30)
    for seed in range(4):
        a_small = [e.id for e in sample_entries(small.entries("alpha", "agnews"), 5, seed)]
        a_large = [e.id for e in sample_entries(large.entries("alpha", "agnews"), 5, seed)]
        assert a_small == a_large
    # the key names the method and the task: the same positions are not forced across them
    alpha = [e.index for e in sample_entries(small.entries("alpha", "agnews"), 5, 0)]
    alpha_imdb = [e.index for e in sample_entries(small.entries("alpha", "imdb"), 5, 0)]
    renamed = [e.index for e in sample_entries(entries("gamma", "agnews", 20), 5, 0)]
    assert alpha != alpha_imdb or alpha != renamed


def test_record_names_the_draw():
    pool = load_bank().entries("adhoc", "imdb")
    record = sample_record(pool, 5, 1)
    assert record == {
        "method": "adhoc", "task": "imdb", "model": None, "instructions_per_method": 5, "instruction_seed": 1,
        "rng_key": "instructeval-bank:adhoc:imdb:1", "bank_size": 40, "positions": [1, 4, 13, 28, 33],
        "ids": ["adhoc-imdb-01", "adhoc-imdb-04", "adhoc-imdb-13", "adhoc-imdb-28", "adhoc-imdb-33"],
    }
    assert record["ids"] == [e.id for e in sample_entries(pool, 5, 1)]


def test_record_of_a_per_model_bank(upstream_dir):
    pool = load_bank(upstream_dir).entries("low_perplexity", "anli", "opt13b")
    record = sample_record(pool, 3, 0)
    assert record["model"] == "opt13b" and len(record["ids"]) == 3
    assert all(i.startswith("orig-low_perplexity-anli-opt13b-") for i in record["ids"])


@pytest.mark.parametrize("n, seed", [(0, 0), (-1, 0), (2.5, 0), (True, 0), (2, "0"), (2, None)])
def test_bad_arguments(n, seed):
    with pytest.raises(BankError):
        sample_entries(entries("adhoc", "agnews", 10), n, seed)


def test_entries_of_one_bank_only():
    with pytest.raises(BankError, match="no entries"):
        sample_entries([], 5, 0)
    mixed = entries("adhoc", "agnews", 3) + entries("generic", "agnews", 3)
    with pytest.raises(BankError, match="one \\(method, task\\) bank"):
        sample_entries(mixed, 2, 0)


def test_the_sweep_planner_uses_it():
    plan = pytest.importorskip("instructeval_tasks.sweep.plan")
    sample_bank_entries = plan.sample_bank_entries
    pool = load_bank().entries("adhoc", "hellaswag")
    assert sample_bank_entries(pool, 5, 4) == sample_entries(pool, 5, 4)
