"""The prompt of a Natural Instructions task: its own header, rendered through the schema's encodings.

The instruction is built from the task file's fields (``source.TaskFile``) in the layout of the
project's structured instructions (``instructeval_banks.structured``): sections joined by a blank
line, each ``Definition: ...`` (likewise ``Prompt``, ``Things to Avoid``, ``Emphasis & Caution`` when
a file has them) or an example block::

    Positive Example 1 -
    Input: {input}
    Output: {output}
    Explanation: {explanation}

Which sections appear is the encoding (metadata ``instruction_encoding``):

- ``NI_ENCODINGS`` (``instructeval_tasks.encodings``): ``definition``; ``pos2``; ``definition_pos2``
  (the benchmark's standard, "Definition + 2 positive examples", the default);
  ``definition_pos2_explanations``; ``definition_pos2_neg2``; ``definition_pos2_neg2_explanations``.
  They take the first N (at most) examples of each list and show the ``Explanation:`` line only in
  the ``_explanations`` ones;
- ``ENCODINGS``, the nine tasks' encodings, exactly as for a structured bank entry: every example,
  with its explanation; a component the file does not have (Super-NaturalInstructions files have no
  ``Prompt``, ``Things to Avoid``, ``Emphasis & Caution``) is left out, and an encoding of which
  nothing is left (``prompt``, ``prompt_avoid``, ``prompt_emphasis`` on such files) is refused: the
  null instruction is ``method: null``.

Text values are stripped. The test block is ``Input: {input}\\nOutput:``, a demonstration (from the
task's positive examples, only with ``--num_fewshot K``) the same block followed by ``" " + output``.

Example:
    >>> from instructeval_tasks.ni.source import TaskFile
    >>> tf = TaskFile("t.json", "Answer yes or no. ", ({"input": "Is ice cold?", "output": "yes", "explanation": "It is."},),
    ...               (), (), ())
    >>> print(render_header(tf, "definition_pos2") + "\\n\\n" + doc_to_text({"input": "Is fire cold?"}))
    Definition: Answer yes or no.
    <BLANKLINE>
    Positive Example 1 -
    Input: Is ice cold?
    Output: yes
    <BLANKLINE>
    Input: Is fire cold?
    Output:
"""

from __future__ import annotations

from typing import Any, Mapping

from instructeval_banks.structured import HEADINGS

from ..encodings import ENCODING_COMPONENTS, NI_ENCODINGS
from ..options import OptionError
from .source import TaskFile

BLOCK = "Input: {input}\nOutput:"


def encoding_parts(encoding: str) -> tuple[tuple[str, ...], int | None, int | None, bool]:
    """``(components, positive examples, negative examples, explanations)`` of an encoding."""
    if encoding in NI_ENCODINGS:
        return NI_ENCODINGS[encoding]
    return ENCODING_COMPONENTS[encoding], None, None, True


def _example_sections(label: str, examples, count: int | None, explanations: bool) -> list[str]:
    sections = []
    for n, example in enumerate(examples[:count] if count is not None else examples, start=1):
        lines = [f"{label} Example {n} -", f"Input: {example['input'].strip()}", f"Output: {example['output'].strip()}"]
        if explanations and example["explanation"].strip() not in ("", "-"):
            lines.append(f"Explanation: {example['explanation'].strip()}")
        sections.append("\n".join(lines))
    return sections


def render_header(task_file: TaskFile, encoding: str) -> str:
    """The instruction text of ``task_file`` under ``encoding`` (see the module docstring)."""
    components, n_pos, n_neg, explanations = encoding_parts(encoding)
    if encoding in NI_ENCODINGS:  # the benchmark's encodings name their examples: none in the file is no such header
        for component, kind, asked in (("positive_examples", "Positive", n_pos), ("negative_examples", "Negative", n_neg)):
            examples = getattr(task_file, component)
            if component in components and asked and not examples:
                raise OptionError(
                    f"metadata instruction_encoding={encoding}: {task_file.path} has no {kind} Examples, so this header "
                    f"would be {'the definition alone' if component == 'positive_examples' else 'definition_pos2'}; "
                    f"choose that encoding instead"
                )
    sections: list[str] = []
    for component in components:
        if component == "definition":
            sections.append(f"{HEADINGS['definition']}: {task_file.definition.strip()}")
        elif component == "positive_examples":
            sections.extend(_example_sections("Positive", task_file.positive_examples, n_pos, explanations))
        elif component == "negative_examples":
            sections.extend(_example_sections("Negative", task_file.negative_examples, n_neg, explanations))
        elif task_file.part(component):
            sections.append(f"{HEADINGS[component]}: {task_file.part(component).strip()}")
    if not sections:
        raise OptionError(
            f"metadata instruction_encoding={encoding}: {task_file.path} has none of its parts "
            f"({', '.join(components)}); choose another encoding, or method null for no instruction"
        )
    return "\n\n".join(sections)


def doc_to_text(doc: Mapping[str, Any]) -> str:
    return BLOCK.format(input=doc["input"])


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The output a demonstration shows; scoring uses every acceptable output (``doc["outputs"]``)."""
    return doc["outputs"][0]
