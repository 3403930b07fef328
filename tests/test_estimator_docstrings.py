"""The budgeted estimators' docstrings state their models and contracts: every example in them runs,
and every number left in their prose is one a check below asserts. Measurements (seeds, errors,
coverages of variants tried) belong to ``docs/validation/``, not to a docstring."""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import re

import numpy as np
import pytest

# Citations (``Polo et al. 2024``, ``Bankier 1988``) are no measurements.
CITATION = re.compile(r"(?:[A-Z][A-Za-z]+|et al\.),? (?:19|20)\d\d\b")
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
FORMULA_DIGITS = {"0", "1", "2"}  # ``log(1 - r)``, ``s^2``, ``0..n-1``: no figure to assert


def prose(doc: str) -> str:
    """``doc`` without its doctest examples (``>>>`` lines, their output) and the ``Example ...:``
    paragraph that introduces them: the doctests assert those."""
    kept: list[str] = []
    paragraph: list[str] = []
    in_example = False
    for line in doc.splitlines() + [""]:
        text = line.strip()
        if text.startswith(">>>") or text.startswith("... ") or text == "...":
            if paragraph and paragraph[0].strip().startswith("Example"):
                paragraph = []
            kept += paragraph
            paragraph, in_example = [], True
            continue
        if in_example and text:  # the example's expected output
            continue
        in_example = False
        if text:
            paragraph.append(line)
        else:
            kept += paragraph
            paragraph = []
    return "\n".join(kept)


def prose_numbers(source: str) -> list[tuple[str, str]]:
    """``(where, number)`` of every number in the prose of the module's, classes' and functions'
    docstrings of ``source`` but 0, 1 and 2."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                text = CITATION.sub("", prose(doc))
                found += [(getattr(node, "name", "module doc"), n) for n in NUMBER.findall(text) if n not in FORMULA_DIGITS]
    return found


def _quantiles_are_documented(budgeted) -> bool:
    return budgeted.QUANTILES == (0.05, 0.25, 0.5, 0.75, 0.95)


def _gain_is_in_percent(budgeted) -> bool:
    gain, _ = budgeted.method_contrasts(np.array([0.5, 0.6]), ["null", "a"], 1.0)
    return bool(np.isclose(gain["a"], 100 * (0.6 - 0.55) / 0.55))


def _one_sided_bound_is_97_5_after_one_cell(budgeted) -> bool:
    from instructeval_tasks.estimation import Cells

    cells = Cells(np.array([0]), np.array([0]), np.array([0.0]), 1, 2)  # one cell of two observed, wrong
    return budgeted._one_sided(cells, np.array([0]), "a") == "no correct answer in the 1 observed cells of a (up to 97.5%)"


# Per module, each number its docstrings' prose states and the check that asserts it.
DOCUMENTED_NUMBERS = {
    "instructeval_tasks.estimation": {},
    "instructeval_tasks.estimation.protocol": {},
    "instructeval_tasks.estimation.registry": {},
    "instructeval_tasks.estimation.item_response": {},
    "instructeval_tasks.estimation.choice_scores": {},
    "instructeval_aggregation.budgeted": {
        **{q: _quantiles_are_documented for q in ("5", "25", "50", "75", "95")},
        "100": _gain_is_in_percent,
        "97.5": _one_sided_bound_is_97_5_after_one_cell,
        "0.025": _one_sided_bound_is_97_5_after_one_cell,
    },
    "instructeval_aggregation.budget_report": {},
    "instructeval_tasks.sweep.budget": {},
}


@pytest.mark.parametrize("name", sorted(DOCUMENTED_NUMBERS))
def test_every_number_in_the_docstrings_is_asserted(name):
    module = importlib.import_module(name)
    found = prose_numbers(inspect.getsource(module))
    checks = DOCUMENTED_NUMBERS[name]
    unchecked = sorted({f"{where}: {number}" for where, number in found if number not in checks})
    assert not unchecked, (f"{name}: numbers in docstrings that no check asserts (measurements go to "
                           f"docs/validation/; a property of the code gets a check in DOCUMENTED_NUMBERS): {unchecked}")
    stale = sorted(set(checks) - {number for _, number in found})
    assert not stale, f"{name}: checks of numbers its docstrings no longer state: {stale}"
    failed = sorted(number for number, check in checks.items() if not check(module))
    assert not failed, f"{name}: the docstrings state {failed}, which the code no longer does"


def test_the_number_check_finds_a_measurement_and_skips_examples_and_citations():
    source = '''
def f():
    """The prior (Polo et al. 2024) took the error from 0.64 to 0.73 points, 10 seeds.

    Example (5 instructions):
        >>> f(37)
        42
    """
'''
    assert [number for _, number in prose_numbers(source)] == ["0.64", "0.73", "10"]


@pytest.mark.parametrize("name", sorted(DOCUMENTED_NUMBERS))
def test_the_docstring_examples_run(name):
    failures, _ = doctest.testmod(importlib.import_module(name))
    assert failures == 0, name
