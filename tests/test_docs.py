"""The documentation site builds strictly (every link and anchor resolves, every page is in the
navigation), the README links every guide, and the architecture page's layer table is the
import-linter contract of ``pyproject.toml``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
ARCHITECTURE = REPO / "docs" / "architecture.md"


def test_site_builds_strictly(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # no banner about the theme's successor
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    home = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "Quick start" in home and 'href="sweeps/"' in home  # the README, its links made the site's


def _nav_pages(nav) -> list[str]:
    pages = []
    for entry in nav:
        for value in (entry.values() if isinstance(entry, dict) else [entry]):
            pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_the_readme_links_every_guide():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    guides = [page for page in _nav_pages(nav) if "/" not in page and page != "index.md"]
    assert len(guides) >= 10
    missing = [page for page in guides if f"](docs/{page}" not in readme]
    assert not missing, f"README.md links no guide {missing}"


def _contract_layers() -> list[tuple[set[str], bool]]:
    """The ``layers`` contract of pyproject.toml, top first: (modules, independent) per layer."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [(set(re.split(r"\s*[:|]\s*", layer.strip())), "|" in layer) for layer in contract["layers"]]


def _documented_layers() -> list[tuple[set[str], bool]]:
    """The architecture page's layer table, top first (``.x`` stands for ``instructeval_tasks.x``)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text.split("| layer | modules | what |", 1)[1].split("\n\n", 1)[0]
    layers = []
    for row in table.strip().splitlines()[1:]:
        name, modules, _ = [cell.strip() for cell in row.strip("|").split("|")]
        names = {m if not m.startswith(".") else f"instructeval_tasks{m}" for m in re.findall(r"`([^`]+)`", modules)}
        layers.append((names, "independent" in name))
    return layers


def test_the_documented_layers_are_the_import_contract():
    documented, contract = _documented_layers(), _contract_layers()
    assert len(documented) == len(contract), "docs/architecture.md and pyproject.toml list other layers"
    for row, ((doc_modules, doc_independent), (modules, independent)) in enumerate(zip(documented, contract), 1):
        assert doc_modules == modules, f"layer {row}: only in the docs {doc_modules - modules}, only in pyproject.toml {modules - doc_modules}"
        assert doc_independent == independent, f"layer {row}: independence differs"


def test_every_import_contract_is_described():
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    text = ARCHITECTURE.read_text(encoding="utf-8")
    others = [c["id"] for c in config["contracts"] if c["type"] != "layers"]
    assert others and all(f"`{cid}`" in text for cid in others), others


def test_no_page_names_a_folder_of_the_machine_it_was_written_on():
    """The README, the guides and the generated pages quote commands a reader runs from the clone:
    a path such as /work/... or /home/<user>/... is a developer's machine, not the reader's."""
    machine = re.compile(r"(?:^|[^\w.~/-])/(?:work|root|home|Users|tmp|mnt|opt|srv|var/folders)/")
    found = [f"{path.relative_to(REPO)}:{n}" for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if machine.search(line)]
    assert not found, found
