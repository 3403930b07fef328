"""The 24 Instruction Induction tasks and the original's per-task tables.

Harness-safe ids replace ``-`` with ``_`` and add the ``ii_`` prefix (``translation_en-de`` ->
``ii_translation_en_de``); the harness task is ``instructeval_ii_<task>``, the bank task id
``ii_<task>``. The tables are copied from the original code (``evaluate.py``,
``prepare_for_execution.py`` at ``SOURCE_COMMIT``).

Example:
    >>> ii_id("translation_en-de"), source_name("ii_translation_en_de")
    ('ii_translation_en_de', 'translation_en-de')
    >>> metric_of("ii_synonyms"), metric_of("ii_sum")
    ('contains', 'em')
"""

from __future__ import annotations

# The original repository and the commit whose data and code this follows (``source`` downloads it).
REPOSITORY = "orhonovich/instruction-induction"
SOURCE_COMMIT = "f7304ae0a35239c9819a08f93fd58426f6b4e4c1"

# evaluate.py / prepare_for_execution.py: INDUCTION_TASKS, in the original's order.
INDUCTION_TASKS = (
    "active_to_passive", "antonyms", "cause_and_effect", "common_concept", "diff", "first_word_letter",
    "informal_to_formal", "larger_animal", "letters_list", "negation", "num_to_verbal",
    "orthography_starts_with", "rhymes", "second_word_letter", "sentence_similarity", "sentiment",
    "singular_to_plural", "sum", "synonyms", "taxonomy_animal", "translation_en-de", "translation_en-es",
    "translation_en-fr", "word_in_context",
)

# evaluate.py: TASK_TO_METRIC ('em' for every task not listed).
TASK_TO_METRIC = {
    "common_concept": "f1", "informal_to_formal": "f1", "orthography_starts_with": "es",
    "taxonomy_animal": "es", "synonyms": "contains",
}

# prepare_for_execution.py: TASK_TO_ANSWERS, the field holding every correct answer.
TASK_TO_ANSWERS = {
    "rhymes": "other_rhymes", "translation_en-de": "possible_translations",
    "translation_en-es": "possible_translations", "translation_en-fr": "possible_translations",
    "sentence_similarity": "possible_outputs", "word_in_context": "possible_outputs",
}

# The released data of sentence_similarity has no ``possible_outputs`` field (the original's
# prepare_for_execution.py raises KeyError on it); its answer is the single ``output``, which is
# what the original would score if the field were present with one entry. instructeval_tasks/instruction_induction/README.md: departures.
ANSWER_FIELD_ABSENT_IN_DATA = ("sentence_similarity",)

PREFIX = "ii_"
HARNESS_PREFIX = "instructeval_"
TAG = "instructeval_ii"


def ii_id(task: str) -> str:
    """``ii_<task>`` with ``-`` made harness-safe (``_``)."""
    if task not in INDUCTION_TASKS:
        raise KeyError(f"unknown Instruction Induction task {task!r}; known: {', '.join(INDUCTION_TASKS)}")
    return PREFIX + task.replace("-", "_")


II_IDS = tuple(ii_id(t) for t in INDUCTION_TASKS)
_SOURCE = {ii_id(t): t for t in INDUCTION_TASKS}


def source_name(name: str) -> str:
    """The original task name of ``ii_<task>`` or ``instructeval_ii_<task>``."""
    key = name.removeprefix(HARNESS_PREFIX)
    try:
        return _SOURCE[key]
    except KeyError:
        raise KeyError(f"unknown Instruction Induction task {name!r}; known: {', '.join(II_IDS)}") from None


def metric_of(name: str) -> str:
    """The original's metric of a task: ``em``, ``f1``, ``es`` (exact set) or ``contains``."""
    return TASK_TO_METRIC.get(source_name(name), "em")


def is_ii(name: str) -> bool:
    return name.removeprefix(HARNESS_PREFIX) in _SOURCE
