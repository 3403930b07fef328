"""Fixed vocabulary of the aggregation: tasks, methods, settings and metrics, in the paper's order.

Every table is laid out in these orders (Ajith et al. 2024, Tables 3-6): rows are methods
(Null, Generic, PromptSource, Ad hoc, Low Perplexity, APE, RLPrompt, then any other method sorted
by id) and columns are tasks (AG News, ANLI, BoolQ, IMDB, Emotion, HellaSwag, CosmosQA, TriviaQA,
NQ-Open, then any other task sorted by id).
"""

from __future__ import annotations

from typing import Iterable

from instructeval_tasks.selection_methods import SELECTION_METHODS, method_alias_map
from instructeval_tasks.specs import REPORT_ORDER, TASK_SPECS

# Tasks, their column titles and kinds ("cls", "mcq", "gqa"), read from the task specs (each task's
# task_spec.yaml, the facts layer), not restated.
TASK_ORDER = REPORT_ORDER
TASK_TITLES = {name: spec.report_title or spec.title for name, spec in TASK_SPECS.items()}
TASK_KIND = {name: spec.kind for name, spec in TASK_SPECS.items()}
TYPE_ORDER = ("cls", "mcq", "gqa")
TYPE_TITLES = {"cls": "CLS", "mcq": "MCQ", "gqa": "GQA"}

# Methods, their row titles and other names, read from the selection-method registry (facts layer).
METHOD_ORDER = tuple(SELECTION_METHODS)
METHOD_TITLES = {
    **{name: method.title for name, method in SELECTION_METHODS.items()},
    "literal": "Literal",  # an instruction given as text (``instruction`` metadata), no method
    "custom": "Custom",
}
# Names the original code and notebook used for the same methods (instruction directories).
METHOD_ALIASES = method_alias_map()

SETTINGS = ("zero_shot", "few_shot", "perturbed", "ordering")

# Per-instruction accuracy metrics (relative gain is computed for each) and sensitivities.
ACCURACY_METRICS = ("zero_shot", "few_shot", "perturbed", "worst_case")
SENSITIVITY_METRICS = ("selectional", "permutational")
METRIC_TITLES = {
    "zero_shot": "Zero-shot accuracy",
    "few_shot": "Few-shot accuracy",
    "perturbed": "Perturbation accuracy",
    "worst_case": "Worst-case perturbation accuracy",
    "selectional": "Selectional sensitivity",
    "permutational": "Permutational sensitivity",
}
METRIC_SHORT = {
    "zero_shot": "ZS",
    "few_shot": "FS",
    "perturbed": "Pert",
    "worst_case": "WC",
    "selectional": "Sel",
    "permutational": "Perm",
}

# Harness metric names reported by the tasks (results keys "<name>,none").
CHOICE_METRICS = ("acc_per_token", "acc", "acc_norm")
GENERATION_METRICS = ("quasi_exact_match",)
KNOWN_RESULT_METRICS = CHOICE_METRICS + GENERATION_METRICS


def canonical_method(method: str | None, instruction_text: str | None = None) -> str:
    """The method id used in tables: aliases mapped, ``None`` resolved as the task does.

    A missing method means a literal instruction, or the null instruction when the text is blank
    (``instructeval_tasks.instruction.resolve_instruction``).

    Example:
        >>> canonical_method("manual"), canonical_method(None, ""), canonical_method(None, "Hi")
        ('promptsource', 'null', 'literal')
    """
    if method is None:
        return "literal" if (instruction_text or "").strip() else "null"
    key = str(method).strip().lower()
    return METHOD_ALIASES.get(key, key)


def _ordered(items: Iterable[str], order: tuple[str, ...]) -> list[str]:
    items = set(items)
    known = [x for x in order if x in items]
    return known + sorted(items - set(order))


def order_tasks(tasks: Iterable[str]) -> list[str]:
    """Tasks in the paper's column order, unknown tasks after them sorted by id."""
    return _ordered(tasks, TASK_ORDER)


def order_methods(methods: Iterable[str]) -> list[str]:
    """Methods in the paper's row order, other methods after them sorted by id."""
    return _ordered(methods, METHOD_ORDER)


def task_title(task: str) -> str:
    return TASK_TITLES.get(task, task)


def method_title(method: str) -> str:
    return METHOD_TITLES.get(method, method)


def type_title(kind: str) -> str:
    return TYPE_TITLES.get(kind, kind.upper())
