"""Alias of :mod:`instructeval_tasks.induce.execution` (the import path of earlier releases)."""

import sys

from .induce import execution as _module

sys.modules[__name__] = _module
