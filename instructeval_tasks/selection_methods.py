"""The instruction-selection methods: one registry, read by the banks, the inducers, the CLI and the report.

A method is either a **bank source** (its instructions are shipped bank files, the same for every
model: null, generic, PromptSource, ad hoc) or an **induced** method (its instructions are computed
per model by an *inducer*, ``instructeval induce --method <inducer>``: low perplexity, APE,
RLPrompt). Inducers are registered in ``instructeval_tasks.induce.registry``; an inducer either
produces one of the induced methods here or scores instructions without being a method
(``execution_accuracy``).

Example:
    >>> [m.name for m in SELECTION_METHODS.values() if m.source == "induced"]
    ['low_perplexity', 'ape', 'rlprompt']
    >>> SELECTION_METHODS["adhoc"].title, method_alias_map()["chat_gpt_prompts"]
    ('Ad hoc', 'adhoc')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MethodSource = Literal["bank", "induced"]


@dataclass(frozen=True)
class SelectionMethod:
    """One instruction-selection method of the paper (Ajith et al. 2024, Sec. 3).

    Attributes:
        name: the method id (bank files' ``method:``, ``--methods``, table rows).
        title: the table row title.
        source: ``bank`` (shipped bank files) or ``induced`` (computed per model by ``inducer``).
        inducer: the ``instructeval induce --method`` that computes it (induced methods only).
        original_dir: the folder name of the original code's ``instructions/<dir>/``.
        aliases: other names results files or notebooks use for it.
    """

    name: str
    title: str
    source: MethodSource
    inducer: str | None = None
    original_dir: str | None = None
    aliases: tuple[str, ...] = ()


# In the paper's row order (Tables 3-6).
SELECTION_METHODS: dict[str, SelectionMethod] = {
    m.name: m
    for m in (
        SelectionMethod("null", "Null", "bank", original_dir="no_instruction", aliases=("none",)),
        SelectionMethod("generic", "Generic", "bank", original_dir="generic_instruction"),
        SelectionMethod("promptsource", "PromptSource", "bank", original_dir="manual"),
        SelectionMethod("adhoc", "Ad hoc", "bank", original_dir="chat_gpt_prompts", aliases=("ad_hoc",)),
        SelectionMethod("low_perplexity", "Low Perplexity", "induced", inducer="low_perplexity",
                        original_dir="low_perplexity_prompts", aliases=("lowperplexity",)),
        SelectionMethod("ape", "APE", "induced", inducer="ape", original_dir="ape"),
        SelectionMethod("rlprompt", "RLPrompt", "induced", inducer="rlprompt", original_dir="rlprompt"),
    )
}


def method_alias_map() -> dict[str, str]:
    """Every other name of a method (original folder names, aliases) -> its id."""
    out: dict[str, str] = {}
    for method in SELECTION_METHODS.values():
        for alias in (method.original_dir, *method.aliases):
            if alias and alias != method.name:
                out[alias] = method.name
    return out
