"""Alias of :mod:`instructeval_tasks.induce.run` (the import path of earlier releases)."""

import sys

from .induce import run as _module

sys.modules[__name__] = _module
