"""What a bank may not hold, and the one error for a bank that holds it.

Example:
    >>> print(BankError(["a.yaml: entry 3: empty text", "a.yaml: entry 5: duplicate id"]))
    a.yaml: entry 3: empty text
    a.yaml: entry 5: duplicate id
"""

from __future__ import annotations

from typing import Iterable

from instructeval_tasks.errors import UserError

# Template syntax an instruction must not contain: the prompt templates are Jinja, and an
# instruction is inserted as text, never as template source.
TEMPLATE_SYNTAX = ("{{", "{%", "{#")


class BankError(UserError, ValueError):
    """A malformed bank file or a failed lookup; the message names the file, the entry and the fix.

    ``errors`` lists every problem found (a validation error may hold several, one per line).
    """

    def __init__(self, message: str | Iterable[str]):
        errors = [message] if isinstance(message, str) else list(message)
        self.errors = errors
        super().__init__("\n".join(errors))
