"""The prefix tree and its evaluator under their import path of earlier releases (see ``backend/``)."""

from .backend.evaluator import ModelSpec, TreeEvaluator  # noqa: F401
from .backend.kv import cache_tensors, make_cache  # noqa: F401
from .backend.rows import Group, Row  # noqa: F401
from .backend.tree import Node, PrefixTree  # noqa: F401
