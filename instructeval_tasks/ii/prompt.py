"""The execution prompt of the original (``prepare_for_execution.py``), split the harness's way.

Original, zero-shot::

    f'Instruction: {instruction}\\nInput: {input_}\\nOutput:'

Here the description is ``f"Instruction: {instruction}\\n"`` (the instruction verbatim: no
stripping, no template rendering) and the document block is ``f"Input: {input}\\nOutput:"``, so
the zero-shot context is the original's byte for byte. With K demonstrations (``--num_fewshot K``)
each is the same block followed by ``" " + output`` and a blank line, in the same format::

    Instruction: {instruction}
    Input: {x_1}
    Output: {y_1}

    ...
    Input: {input}
    Output:

The null instruction (empty or blank) leaves out the ``Instruction:`` line: the prompt starts
at the first block.

Example:
    >>> description("Write the opposite.") + doc_to_text({"input": "hot"})
    'Instruction: Write the opposite.\\nInput: hot\\nOutput:'
    >>> description("") + doc_to_text({"input": "hot"})
    'Input: hot\\nOutput:'
"""

from __future__ import annotations

from typing import Any, Mapping

INSTRUCTION_LINE = "Instruction: {instruction}\n"
BLOCK = "Input: {input}\nOutput:"


def description(instruction: str) -> str:
    """``Instruction: {instruction}\\n``, or ``""`` for the null instruction."""
    return "" if not instruction.strip() else INSTRUCTION_LINE.format(instruction=instruction)


def doc_to_text(doc: Mapping[str, Any]) -> str:
    return BLOCK.format(input=doc["input"])


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The answer a demonstration shows; scoring uses every correct answer (``doc["answers"]``)."""
    return doc["output"]
