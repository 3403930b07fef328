"""Instruction banks: the instructions each selection method proposes, per task (import name ``instructeval_banks``).

A bank file is YAML in this schema (see ``README.md`` beside this file)::

    method: generic                 # the selection method
    tasks: all                      # "all", or a list of task ids (agnews, anli, ...)
    model: null                     # optional: the model a model-specific bank was selected for
    provenance:                     # required: where the instructions come from
      source: Ajith et al. (2024), Table 9
    entries:
      - id: generic-0               # stable, unique within (method, task, model)
        text: "Solve the following task:"

Every ``*.yaml`` below a bank directory is read; several files may serve one method (one file per
task, say). A file whose top level is a YAML list is read in the original InstructEval layout
(``<method_dir>/[<model>/]<task_stem>.yaml``), so the original ``instructions/`` folder works as a
``bank_dir`` as is. Instructions are plain data: the plugin never renders them as templates, so an
entry containing ``{{``, ``{%`` or ``{#`` is rejected as an unstripped template placeholder.

Modules: ``schema`` (entries, native files, validation), ``structured`` (Natural Instructions
entries and encodings), ``original_layout``, ``loader`` (``Bank``, ``load_bank_dir``), ``sampling``
(``sample_entries``); tools: ``promptsource_import`` and ``adhoc_generate``.

Example:
    >>> from instructeval_banks import load_bank
    >>> load_bank().entry("generic", "agnews", index=0).text
    'Solve the following task:'
"""

from __future__ import annotations

from .loader import (
    BANKS_DIR,
    Bank,
    bank_dir_list,
    check_bank_dir,
    join_bank_dirs,
    load_bank,
    load_bank_dir,
    load_banks,
    load_layered_bank,
    merge_banks,
)
from .original_layout import METHOD_DIRS, TASK_STEMS, TASK_TO_STEM
from .sampling import sample_entries, sample_record
from .schema import (
    ALL_TASKS,
    PAPER_METHODS,
    BankEntry,
    BankError,
    check_bank_file,
    instruction_sha,
    normalize_text,
    parse_bank_file,
)
from .structured import DEFAULT_ENCODING, ENCODINGS, render_structured, structured_problems

__all__ = [
    "ALL_TASKS",
    "BANKS_DIR",
    "DEFAULT_ENCODING",
    "ENCODINGS",
    "METHOD_DIRS",
    "PAPER_METHODS",
    "TASK_STEMS",
    "TASK_TO_STEM",
    "Bank",
    "BankEntry",
    "BankError",
    "check_bank_dir",
    "check_bank_file",
    "instruction_sha",
    "bank_dir_list",
    "join_bank_dirs",
    "load_bank",
    "load_bank_dir",
    "load_banks",
    "load_layered_bank",
    "merge_banks",
    "normalize_text",
    "parse_bank_file",
    "render_structured",
    "sample_entries",
    "sample_record",
    "structured_problems",
]
