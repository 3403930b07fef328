"""Ctrl-C during a sweep: the first press stops after the current chunk, the second stops at once.

A plain ``KeyboardInterrupt`` can be swallowed when it lands inside a destructor or a callback
(Python then prints "Exception ignored in ..."), and a sweep would run on. Here the signal handler
only sets a flag that the runner checks between chunks, so the request is never lost, the chunk in
progress is saved, and a second Ctrl-C still raises ``KeyboardInterrupt`` immediately.

SIGTERM (a scheduler's or ``kill``'s stop) stops at once, like a second Ctrl-C, but as
:class:`Terminated`: the runner says what is saved and how to resume, and the CLI exits with 143.
The handler also records the request, so a ``Terminated`` swallowed where it landed (a destructor,
a callback) still stops the sweep at the next chunk boundary (:meth:`StopRequests.raise_if_requested`);
while the handlers are installed, Python's "Exception ignored in ..." report of such a swallowed stop
is left out (the request is not lost, so its traceback would only alarm), other reports are kept.
"""

from __future__ import annotations

import signal
import sys
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
        ...     stop.requested, stop.terminated
        (False, False)
    """

    def __init__(self, echo: Callable[[str], None]) -> None:
        self.echo = echo
        self.requested = False
        self.terminated = False
        self._previous = None
        self._previous_term = None
        self._previous_unraisable = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.echo("stopping after the current chunk (press Ctrl-C again to stop now)")

    def _terminate(self, signum: int, frame: FrameType | None) -> None:
        self.terminated = self.requested = True
        raise Terminated

    def raise_if_requested(self) -> None:
        """Between chunks: raise :class:`Terminated` after SIGTERM, ``KeyboardInterrupt`` after Ctrl-C.

        Example:
            >>> stop = StopRequests(print)
            >>> stop.raise_if_requested()  # nothing asked: returns; after SIGTERM it raises Terminated
        """
        if self.terminated:
            raise Terminated
        if self.requested:
            raise KeyboardInterrupt

    def _unraisable(self, report: "sys.UnraisableHookArgs") -> None:
        if isinstance(report.exc_value, KeyboardInterrupt) and self.requested:
            return  # a stop this object raised and recorded: the runner acts on the record
        (self._previous_unraisable or sys.__unraisablehook__)(report)

    def __enter__(self) -> "StopRequests":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._previous_term = signal.signal(signal.SIGTERM, self._terminate)
            self._previous_unraisable, sys.unraisablehook = sys.unraisablehook, self._unraisable
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        if self._previous_term is not None:
            signal.signal(signal.SIGTERM, self._previous_term)
            self._previous_term = None
        if self._previous_unraisable is not None:
            sys.unraisablehook, self._previous_unraisable = self._previous_unraisable, None
