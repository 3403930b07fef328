"""MkDocs hook: the site's home page is the repository's README.md.

The README links the guides as ``docs/<page>.md`` (right on a code host, from the repository's root);
on the site, where ``docs/`` is the root, those links lose the prefix. Nothing else is rewritten, so
``mkdocs build --strict`` still fails on any link of the README that does not resolve on the site.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files


def on_files(files: Files, config) -> Files:
    readme = Path(config["config_file_path"]).resolve().parent / "README.md"
    text = readme.read_text(encoding="utf-8").replace("](docs/", "](")
    files.append(File.generated(config, "index.md", content=text))
    return files
