"""Choosing the instruction of a task run: a literal string, a bank entry, or the null instruction.

The instruction is data. It reaches the prompt as the harness ``description`` but is never
rendered as a template, so ``{{ x }}`` or ``{% raw %}`` in an instruction appear verbatim.

Prompt rule (``description``): ``instruction.lstrip() + "\\n\\n"``; the null (empty or blank)
instruction gives ``""``, so the prompt starts with the first demonstration. Leading whitespace is
dropped as the original's template did; trailing whitespace is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from instructeval_banks import DEFAULT_ENCODING, instruction_sha, load_layered_bank, render_structured

from .options import OptionError, TaskOptions
from .specs import TaskSpec

LITERAL_METHOD = "literal"


@dataclass(frozen=True)
class Instruction:
    """The resolved instruction and where it came from.

    Example:
        >>> Instruction("Classify the news.", "literal", "literal", None, "metadata").description
        'Classify the news.\\n\\n'
        >>> Instruction("", "null", "null", 0, "bank").description
        ''
    """

    text: str
    method: str
    entry_id: str
    index: int | None
    source: str
    encoding: str | None = None  # the encoding a structured (Natural Instructions) entry was rendered with

    @property
    def is_null(self) -> bool:
        return not self.text.strip()

    @property
    def description(self) -> str:
        return "" if self.is_null else self.text.lstrip() + "\n\n"

    @property
    def sha(self) -> str:
        return instruction_sha(self.text)

    def record(self) -> dict:
        """The keys written to the results' task metadata."""
        return {
            "method": self.method,
            "instruction_id": self.entry_id,
            "instruction_index": self.index,
            "instruction_sha": self.sha,
            "instruction_text": self.text,
            "instruction_source": self.source,
            "instruction_encoding": self.encoding,
        }


def resolve_instruction(options: TaskOptions, spec: TaskSpec, model: str | None = None) -> Instruction:
    """Literal ``instruction`` wins; else ``method`` + ``instruction_index``/``instruction_id``; else null."""
    if options.instruction is not None:
        if options.instruction_index is not None or options.instruction_id is not None:
            raise OptionError(
                "metadata sets both 'instruction' (a literal) and 'instruction_index'/'instruction_id' "
                "(a bank entry); keep one"
            )
        method = options.method or (LITERAL_METHOD if options.instruction.strip() else "null")
        return Instruction(options.instruction, method, LITERAL_METHOD, None, "metadata")
    method = options.method or "null"
    bank = load_layered_bank(options.bank_dir)  # bank_dir's directories layered over the shipped banks
    entry = bank.entry(
        method, spec.name, index=options.instruction_index, entry_id=options.instruction_id, model=model
    )
    if entry.structured is not None:  # apply ``instruction_encoding`` (default ``full``, = entry.text)
        encoding = options.instruction_encoding or DEFAULT_ENCODING
        text = render_structured(entry.structured, encoding)
        return Instruction(text, entry.method, entry.id, entry.index, entry.source_file, encoding)
    return Instruction(entry.text, entry.method, entry.id, entry.index, entry.source_file)
