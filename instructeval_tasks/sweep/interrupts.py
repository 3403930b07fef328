"""Ctrl-C during a sweep: the first press stops after the current chunk, the second stops at once.

A plain ``KeyboardInterrupt`` can be swallowed when it lands inside a destructor or a callback
(Python then prints "Exception ignored in ..."), and a sweep would run on. Here the signal handler
only sets a flag that the runner checks between chunks, so the request is never lost, the chunk in
progress is saved, and a second Ctrl-C still raises ``KeyboardInterrupt`` immediately.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Callable


class StopRequests:
    """Context manager installing the two-step SIGINT handler (main thread only; else a no-op).

    Example:
        >>> with StopRequests(print) as stop:
        ...     stop.requested
        False
    """

    def __init__(self, echo: Callable[[str], None]) -> None:
        self.echo = echo
        self.requested = False
        self._previous = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.echo("stopping after the current chunk (press Ctrl-C again to stop now)")

    def __enter__(self) -> "StopRequests":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
