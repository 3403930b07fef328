"""Alias of :mod:`instructeval_tasks.induce.perplexity` (the import path of earlier releases)."""

import sys

from .induce import perplexity as _module

sys.modules[__name__] = _module
