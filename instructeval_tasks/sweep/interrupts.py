"""Ctrl-C during a sweep: the first press stops after the current chunk, the second stops at once.

A plain ``KeyboardInterrupt`` can be swallowed when it lands inside a destructor or a callback
(Python then prints "Exception ignored in ..."), and a sweep would run on. Here the signal handler
only sets a flag that the runner checks between chunks, so the request is never lost, the chunk in
progress is saved, and a second Ctrl-C still raises ``KeyboardInterrupt`` immediately.

SIGTERM (a scheduler's or ``kill``'s stop) stops at once, like a second Ctrl-C, but as
:class:`Terminated`: the runner says what is saved and how to resume, and the CLI exits with 143.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Callable


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM: stop now, keep what is saved (exit status 128 + 15)."""


class StopRequests:
    """Context manager installing the two-step SIGINT handler and the SIGTERM handler (main thread
    only; else a no-op).

    Example:
        >>> with StopRequests(print) as stop:
        ...     stop.requested
        False
    """

    def __init__(self, echo: Callable[[str], None]) -> None:
        self.echo = echo
        self.requested = False
        self._previous = None
        self._previous_term = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.echo("stopping after the current chunk (press Ctrl-C again to stop now)")

    @staticmethod
    def _terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    def __enter__(self) -> "StopRequests":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._previous_term = signal.signal(signal.SIGTERM, self._terminate)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        if self._previous_term is not None:
            signal.signal(signal.SIGTERM, self._previous_term)
            self._previous_term = None
