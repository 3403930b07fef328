"""Alias of :mod:`instructeval_tasks.induce.ape` (the import path of earlier releases)."""

import sys

from .induce import ape as _module

sys.modules[__name__] = _module
