"""The one exception type for mistakes in what the user asked for.

``instructeval`` prints a :class:`UserError` as one line, ``instructeval: error: <message>``, and
exits with code 2 (argparse's code for a usage error); ``instructeval --debug ...`` shows the
traceback instead. Every error class that describes bad input (an unknown task, a malformed bank,
a refused resume, a missing data file) derives from it, so the CLI needs no list of them.

Example::

    raise UserError("unknown task 'agnwes' (did you mean 'agnews'?)")
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input from the user: a one-line message that names the file, field or option and the fix."""
