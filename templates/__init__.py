"""InstructEval demo templates, one Jinja file per task (import name ``instructeval_templates``).

Each ``<task>.j2`` renders the *question part* of one demonstration in the paper's minimal
key-value format (Ajith et al., Table 7) and stops at the answer field's colon::

    News: {{ text }}
    Category:

The harness appends ``" " + answer`` for a demonstration and nothing for the test example, so a
K-shot prompt is ``instruction + "\\n\\n" + (demo + " " + answer + "\\n\\n") * K + test``.

A template may export ``choices`` with ``{% set choices = [...] %}``: the verbalizer for
classification (constant) or the per-item answer list for multiple choice. Exported values are
read from the same render, so the format and its answer strings live in one file.

Task YAMLs reference the renderers by name::

    doc_to_text: !function instructeval_templates.agnews
    doc_to_choice: !function instructeval_templates.agnews_choices

Example:
    >>> from instructeval_templates import load_template
    >>> t = load_template("agnews")
    >>> t({"text": "Stocks rose.", "label": 2})
    'News: Stocks rose.\\nCategory:'
    >>> t.choices({"text": "Stocks rose.", "label": 2})
    ['World', 'Sports', 'Business', 'Sci/Tech']
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any, Mapping

import jinja2

TEMPLATES_DIR = Path(__file__).resolve().parent

# StrictUndefined: a field missing from a document is an error, never an empty string.
_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    keep_trailing_newline=False,
)


class DemoTemplate:
    """A compiled demo template: ``template(doc)`` gives the text, ``template.choices(doc)`` the answers."""

    def __init__(self, name: str, source: str, template: jinja2.Template) -> None:
        self.name = name
        self.source = source
        self.sha256 = hashlib.sha256(source.encode("utf-8")).hexdigest()
        self._template = template

    @classmethod
    def from_string(cls, name: str, source: str) -> "DemoTemplate":
        return cls(name, source, _ENV.from_string(source))

    def _module(self, doc: Mapping[str, Any]):
        try:
            return self._template.make_module(dict(doc))
        except jinja2.UndefinedError as err:
            raise KeyError(
                f"template {self.name!r} ({TEMPLATES_DIR / (self.name + '.j2')}): {err}; "
                f"the document has fields {sorted(doc)}"
            ) from err

    def __call__(self, doc: Mapping[str, Any]) -> str:
        return str(self._module(doc))

    def choices(self, doc: Mapping[str, Any]) -> list[str]:
        module = self._module(doc)
        choices = getattr(module, "choices", None)
        if choices is None:
            raise ValueError(f"template {self.name!r} exports no 'choices'")
        return [str(c) for c in choices]

    @property
    def has_choices(self) -> bool:
        return "set choices" in self.source

    def __repr__(self) -> str:
        return f"DemoTemplate({self.name!r}, sha256={self.sha256[:12]})"

    def __deepcopy__(self, memo: dict) -> "DemoTemplate":
        # Immutable once compiled; the harness deep-copies task configs when it dumps them.
        return self


class ChoicesRenderer:
    """``doc -> template.choices(doc)``, a named callable for ``doc_to_choice``."""

    def __init__(self, template: DemoTemplate) -> None:
        self.template = template

    def __call__(self, doc: Mapping[str, Any]) -> list[str]:
        return self.template.choices(doc)

    def __repr__(self) -> str:
        return f"ChoicesRenderer({self.template.name!r})"

    def __deepcopy__(self, memo: dict) -> "ChoicesRenderer":
        return self


@functools.cache
def load_template(name: str) -> DemoTemplate:
    """Load ``templates/<name>.j2``; a clear error lists the available names."""
    path = TEMPLATES_DIR / f"{name}.j2"
    if not path.is_file():
        raise FileNotFoundError(
            f"no demo template {path}; available: {', '.join(template_names())}"
        )
    source = path.read_text(encoding="utf-8")
    return DemoTemplate(name, source, _ENV.get_template(f"{name}.j2"))


def template_names() -> list[str]:
    return sorted(p.stem for p in TEMPLATES_DIR.glob("*.j2"))


# Module attributes named after the templates, for `!function instructeval_templates.<name>`
# and `!function instructeval_templates.<name>_choices` in task YAMLs.
for _name in template_names():
    _template = load_template(_name)
    globals()[_name] = _template
    if _template.has_choices:
        globals()[f"{_name}_choices"] = ChoicesRenderer(_template)
del _name, _template
