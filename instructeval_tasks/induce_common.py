"""Alias of :mod:`instructeval_tasks.induce.common` (the import path of earlier releases)."""

import sys

from .induce import common as _module

sys.modules[__name__] = _module
