"""The induction modules live in ``instructeval_tasks.induce``; the flat module names of earlier releases still import them."""

import importlib

import pytest

MOVED = [
    ("induce_common", "common"),
    ("induce_ape", "ape"),
    ("induce_exec", "execution"),
    ("induce_perplexity", "perplexity"),
    ("induce_run", "run"),
]


@pytest.mark.parametrize(("old", "new"), MOVED)
def test_old_module_path_is_the_moved_module(old, new):
    moved = importlib.import_module(f"instructeval_tasks.induce.{new}")
    assert importlib.import_module(f"instructeval_tasks.{old}") is moved


def test_old_path_exposes_private_names_too():
    from instructeval_tasks.induce_common import InduceError, induce_rng

    from instructeval_tasks.induce.common import InduceError as moved_error

    assert InduceError is moved_error
    assert induce_rng("x", "agnews", 0).random() == induce_rng("x", "agnews", 0).random()
