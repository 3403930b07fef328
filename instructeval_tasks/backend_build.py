"""Alias of :mod:`instructeval_tasks.backend.build` (the import path of earlier releases)."""

import sys

from .backend import build as _module

sys.modules[__name__] = _module
