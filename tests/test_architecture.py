"""The architecture holds: layers import one way, no import circles, every module in a layer.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``); ``lint-imports`` checks them and,
when one breaks, names the offending import (file and line). Two more checks here: every module of
the distribution sits in a layer (a new module outside every layer would escape the contracts),
and the whole module graph has no cycle.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("instructeval_tasks", "instructeval_banks", "instructeval_templates", "instructeval_aggregation")
# Package modules (``__init__``) that import nothing of ours at import time, and the aggregation (its own column).
OUTSIDE_LAYERS = ("instructeval_tasks", "instructeval_tasks.ii", "instructeval_tasks.ni")


def _config() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def _graph():
    import grimp  # import-linter's graph builder

    return grimp.build_graph(*PACKAGES, include_external_packages=False)


def test_import_contracts_hold(capsys, monkeypatch):
    from importlinter.cli import lint_imports  # the test extra installs import-linter

    monkeypatch.chdir(REPO)
    code = lint_imports(config_filename=str(REPO / "pyproject.toml"), no_cache=True, no_logo=True)
    out = capsys.readouterr().out
    assert code == 0, out[-4000:]
    assert "BROKEN" not in out and out.count("KEPT") == len(_config()["contracts"]), out


def test_every_module_is_in_a_layer():
    (layers,) = [c["layers"] for c in _config()["contracts"] if c["type"] == "layers"]
    names = [name.strip() for layer in layers for name in layer.replace("|", ":").split(":")]
    outside = []
    for module in sorted(_graph().modules):
        if module in OUTSIDE_LAYERS or module.startswith("instructeval_aggregation"):
            continue
        if not any(module == name or module.startswith(name + ".") for name in names):
            outside.append(module)
    assert not outside, f"modules in no layer of pyproject.toml's layers contract: {outside}"


def test_the_module_graph_has_no_cycle():
    graph = _graph()
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in modules:
        if module not in index:
            visit(module)
    assert not cycles, f"import cycles: {cycles}"
