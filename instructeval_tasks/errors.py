"""The one exception type for mistakes in what the user asked for.

``instructeval`` prints a :class:`UserError` as one line, ``instructeval: error: <message>``, and
exits with code 2 (argparse's code for a usage error); ``instructeval --debug ...`` shows the
traceback instead. Every error class that describes bad input (an unknown task, a malformed bank,
a refused resume, a missing data file) derives from it, so the CLI needs no list of them.

Example::

    raise UserError("unknown task 'agnwes' (did you mean 'agnews'?)")
"""

from __future__ import annotations

import argparse
import difflib
from typing import Iterable


class UserError(Exception):
    """Bad input from the user: a one-line message that names the file, field or option and the fix."""


def did_you_mean(word: object, choices: Iterable[object]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to ``word``, or ``""`` when none is close.

    Example::

        >>> did_you_mean("agnwes", ["agnews", "anli"]), did_you_mean("zzz", ["agnews"])
        (" (did you mean 'agnews'?)", '')
    """
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line ``instructeval: error: ...`` (exit 2), like every user error.

    Sub-command parsers inherit the class (``add_subparsers`` uses the parent's type).
    """

    def error(self, message: str):  # noqa: D102 - argparse's hook
        self.exit(2, f"instructeval: error: {message} (see: {self.prog} --help)\n")


def json_problem(err) -> str:
    """A ``json.JSONDecodeError`` as ``"<what> at column N"``, without doubling the trailing "at" of
    messages like "Unterminated string starting at".

    Example::

        >>> import json
        >>> try:
        ...     json.loads('{"a": "b')
        ... except json.JSONDecodeError as err:
        ...     json_problem(err)
        'Unterminated string starting at column 7'
    """
    return f"{err.msg} column {err.colno}" if err.msg.endswith(" at") else f"{err.msg} at column {err.colno}"


def one_line(err: BaseException) -> str:
    """The error's message on one line (a multi-line message is joined with '; ')."""
    return "; ".join(line.strip() for line in str(err).splitlines() if line.strip()) or type(err).__name__
