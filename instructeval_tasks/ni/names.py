"""The Natural Instructions tasks the plugin ships YAMLs for, and their evaluation categories.

Super-NaturalInstructions (Wang et al., 2022) holds one JSON file per task in its repository's
``tasks/`` folder; this plugin knows the 12 English test tasks below (one per evaluation category of
the default test split, ``splits/default/test_tasks.txt``). Harness-safe ids add the ``ni_`` prefix:
the harness task is ``instructeval_ni_<task>``, the bank task id ``ni_<task>``.

Example:
    >>> ni_id("task190_snli_classification"), source_name("instructeval_ni_task190_snli_classification")
    ('ni_task190_snli_classification', 'task190_snli_classification')
    >>> category_of("ni_task190_snli_classification")
    'Textual Entailment'
"""

from __future__ import annotations

# The benchmark's repository (a user's clone of it is the data source: ``<data_dir>/natural_instructions``).
REPOSITORY = "allenai/natural-instructions"

# task -> its evaluation category (the task file's ``Categories``), in the order of the data's tasks.txt.
TASK_CATEGORIES: dict[str, str] = {
    "task190_snli_classification": "Textual Entailment",
    "task828_copa_commonsense_cause_effect": "Cause Effect Classification",
    "task033_winogrande_answer_generation": "Coreference Resolution",
    "task880_schema_guided_dstc8_classification": "Dialogue Act Recognition",
    "task050_multirc_answerability": "Answerability Classification",
    "task1154_bard_analogical_reasoning_travel": "Word Analogy",
    "task039_qasc_find_overlapping_words": "Overlap Extraction",
    "task036_qasc_topic_word_to_generate_related_fact": "Keyword Tagging",
    "task1195_disflqa_disfluent_to_fluent_conversion": "Question Rewriting",
    "task219_rocstories_title_answer_generation": "Title Generation",
    "task957_e2e_nlg_text_generation_generate": "Data to Text",
    "task1557_jfleg_answer_generation": "Grammar Error Correction",
}
NI_TASKS: tuple[str, ...] = tuple(TASK_CATEGORIES)

# SuperNI evaluates the first 100 instances of a test task (splits/README.md: ``Instances[:100]``).
EVALUATED_INSTANCES = 100

PREFIX = "ni_"
HARNESS_PREFIX = "instructeval_"
TAG = "instructeval_ni"


def ni_id(task: str) -> str:
    """``ni_<task>`` for a known task file stem."""
    if task not in TASK_CATEGORIES:
        raise KeyError(f"unknown Natural Instructions task {task!r}; known: {', '.join(NI_TASKS)}")
    return PREFIX + task


NI_IDS: tuple[str, ...] = tuple(ni_id(t) for t in NI_TASKS)
_SOURCE = {ni_id(t): t for t in NI_TASKS}


def source_name(name: str) -> str:
    """The task file stem of ``ni_<task>`` or ``instructeval_ni_<task>``."""
    key = name.removeprefix(HARNESS_PREFIX)
    try:
        return _SOURCE[key]
    except KeyError:
        raise KeyError(f"unknown Natural Instructions task {name!r}; known: {', '.join(NI_IDS)}") from None


def category_of(name: str) -> str:
    """The evaluation category of ``ni_<task>`` (or its harness name)."""
    return TASK_CATEGORIES[source_name(name)]


def is_ni(name: str) -> bool:
    return name.removeprefix(HARNESS_PREFIX) in _SOURCE
