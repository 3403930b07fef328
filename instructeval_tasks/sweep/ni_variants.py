"""The Natural Instructions tasks in a sweep: each encoding of the task's own header is one instruction.

A sweep over ``ni_<task>`` plans, besides the bank methods of ``--methods`` (``null``, the no-instruction
variant, and ``generic`` by default), one instruction of method ``ni_header`` per header encoding
(``HEADER_ENCODINGS``): id ``ni_header-<task>-<encoding>``, text the task file's header rendered under
that encoding (``ni.prompt.render_header``), exactly what the task renders from the same method and id
in its metadata. An encoding whose text is that of an earlier one on this task file (e.g.
``definition_pos2_neg2`` on a file without negative examples) is not planned twice: its variant would
repeat the earlier one's prompts; ``skipped_encodings`` names them for the plan line.

These tasks are swept zero-shot only (``plan.settings_for``): the header carries the task's examples,
as in the benchmark, whose evaluation has no separate demonstrations.

Example:
    >>> HEADER_ENCODINGS[:3]
    ('definition', 'pos2', 'definition_pos2')
"""

from __future__ import annotations

from instructeval_banks import BankEntry

from ..encodings import NI_ENCODINGS
from ..errors import UserError
from ..ni.names import REPOSITORY, source_name
from ..ni.prompt import render_header
from ..ni.source import LOCAL_DIR, read_task_file
from ..ni.task import HEADER_METHOD
from ..options import OptionError

# The benchmark's ablations (``encodings.NI_ENCODINGS``), then the structured banks' encodings that
# render something else on a Super-NaturalInstructions file (every example, with its explanation).
HEADER_ENCODINGS: tuple[str, ...] = (*NI_ENCODINGS, "pos_examples", "prompt_definition_pos_examples", "full")


def header_id(task: str, encoding: str) -> str:
    """``ni_header-<task file stem>-<encoding>``, the id the task records for that header."""
    return f"{HEADER_METHOD}-{source_name(task)}-{encoding}"


def rendered_headers(task: str, data_dir: str | None) -> dict[str, str | None]:
    """encoding -> its header text on ``task``'s file, None where the text repeats an earlier encoding's
    or the file has none of the encoding's parts.

    Raises:
        UserError: no data directory (the sweep's option named); NIDataNotFound: no task file there.
    """
    if not data_dir:
        raise UserError(f"--tasks {task}: no data directory; give --data-dir <dir> (or set $INSTRUCTEVAL_DATA_DIR) "
                        f"holding <dir>/{LOCAL_DIR}/tasks/{source_name(task)}.json (a clone of {REPOSITORY} named "
                        f"{LOCAL_DIR}, or ../shared/data)")
    task_file = read_task_file(source_name(task), data_dir)
    out: dict[str, str | None] = {}
    for encoding in HEADER_ENCODINGS:
        try:
            text: str | None = render_header(task_file, encoding)
        except OptionError:  # none of its parts in this file (e.g. pos2 without positive examples)
            text = None
        out[encoding] = None if text in out.values() else text
    return out


def header_entries(task: str, data_dir: str | None) -> list[BankEntry]:
    """The ``ni_header`` instructions of ``task`` (``ni_<task>``), one per distinct encoding, in
    ``HEADER_ENCODINGS`` order."""
    texts = [(encoding, text) for encoding, text in rendered_headers(task, data_dir).items() if text is not None]
    path = str(read_task_file(source_name(task), data_dir).path)
    return [BankEntry(id=header_id(task, encoding), text=text, method=HEADER_METHOD, task=task, index=n,
                      source_file=path, extra={"instruction_encoding": encoding})
            for n, (encoding, text) in enumerate(texts)]


def skipped_encodings(task: str, data_dir: str | None) -> list[str]:
    """The encodings not planned on ``task`` (see the module docstring)."""
    return [encoding for encoding, text in rendered_headers(task, data_dir).items() if text is None]
