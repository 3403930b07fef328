"""Fixed vocabulary of the aggregation: tasks, methods, settings and metrics, in the paper's order.

Every table is laid out in these orders (Ajith et al. 2024, Tables 3-6): rows are methods
(Null, Generic, PromptSource, Ad hoc, Low Perplexity, APE, RLPrompt, then any other method sorted
by id) and columns are tasks (AG News, ANLI, BoolQ, IMDB, Emotion, HellaSwag, CosmosQA, TriviaQA,
NQ-Open, then any other task sorted by id).
"""

from __future__ import annotations

from typing import Iterable

from instructeval_tasks.specs import TASK_SPECS

TASK_ORDER = ("agnews", "anli", "boolq", "imdb", "emotion", "hellaswag", "cosmosqa", "triviaqa", "nq_open")
TASK_TITLES = {
    "agnews": "AG News",
    "anli": "ANLI",
    "boolq": "BoolQ",
    "imdb": "IMDB",
    "emotion": "Emotion",
    "hellaswag": "HellaSwag",
    "cosmosqa": "CosmosQA",
    "triviaqa": "TriviaQA",
    "nq_open": "NQ-Open",
}
# task -> kind ("cls", "mcq", "gqa"), read from the task specs (the facts layer), not restated.
TASK_KIND = {name: spec.kind for name, spec in TASK_SPECS.items()}
TYPE_ORDER = ("cls", "mcq", "gqa")
TYPE_TITLES = {"cls": "CLS", "mcq": "MCQ", "gqa": "GQA"}

METHOD_ORDER = ("null", "generic", "promptsource", "adhoc", "low_perplexity", "ape", "rlprompt")
METHOD_TITLES = {
    "null": "Null",
    "generic": "Generic",
    "promptsource": "PromptSource",
    "adhoc": "Ad hoc",
    "low_perplexity": "Low Perplexity",
    "ape": "APE",
    "rlprompt": "RLPrompt",
    "literal": "Literal",
    "custom": "Custom",
}
# Names the original code and notebook used for the same methods (instruction directories).
METHOD_ALIASES = {
    "no_instruction": "null",
    "none": "null",
    "generic_instruction": "generic",
    "manual": "promptsource",
    "chat_gpt_prompts": "adhoc",
    "ad_hoc": "adhoc",
    "low_perplexity_prompts": "low_perplexity",
    "lowperplexity": "low_perplexity",
}

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
