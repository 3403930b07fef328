"""The declared dependency ranges are the tested ones: every floor in ``pyproject.toml`` is pinned
in ``.ci/oldest-constraints.txt``, which ``.ci/run`` installs into a fresh environment beside one
that resolves the newest releases."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _floors() -> dict[str, str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]
    floors = {}
    for requirement in requirements:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[A-Za-z0-9_,.-]+\])?\s*>=\s*([0-9][0-9.]*)(,.*)?", requirement.strip())
        assert match, f"pyproject.toml: {requirement!r} has no floor (name>=version): declare the oldest tested release"
        floors[_norm(match.group(1))] = match.group(2)
    return floors


def _pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / ".ci" / "oldest-constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[_norm(name)] = version.strip()
    return pins


def _same_release(floor: str, pin: str) -> bool:
    """``2.13`` and ``2.13.0`` name one release."""
    pad = lambda v: tuple(int(x) for x in v.split(".")) + (0,) * (4 - len(v.split(".")))  # noqa: E731
    return pad(floor) == pad(pin)


def test_every_floor_is_the_oldest_release_ci_tests():
    floors, pins = _floors(), _pins()
    assert sorted(floors) == sorted(pins), "pyproject.toml and .ci/oldest-constraints.txt name other packages"
    wrong = {name: (floors[name], pins[name]) for name in floors if not _same_release(floors[name], pins[name])}
    assert not wrong, f"floor (pyproject.toml) vs pin (.ci/oldest-constraints.txt): {wrong}"


def test_ci_runs_the_readme_test_command_on_the_newest_and_the_oldest_releases():
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r'^step newest -e "\$root\[test,ray\]"$', script, re.M)
    assert re.search(r'^step oldest -c "\$root/\.ci/oldest-constraints\.txt" -e "\$root\[test,ray\]"$', script, re.M)
    assert "python -m venv" in script and "python -m pytest -q" in script
    assert 'python -m pip install "${pip_q[@]}" torch==2.13.0 "$@"' in script  # torch stays the CPU build
