"""What an induced bank records about how it was made (every inducer's bank writer calls this)."""

from __future__ import annotations

from typing import Any

from .. import __version__
from .common import INDUCE_VERSION


def versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"instructeval_harness": __version__, "induce": str(INDUCE_VERSION)}
    for dist in ("lm_eval", "transformers", "torch"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return out



def provenance_head(method: str, source_text: str, definition: Any, *, model, args_dict, label, source, rows,
                     settings: Any, settings_fp: str) -> dict[str, Any]:
    """The head of an induced bank's ``provenance``: what made it, from which rows, with which settings
    (``settings`` is the run's ``InduceSettings``; its ``for_method(method)`` is recorded)."""
    return {
        "source": source_text,
        "definition": definition,
        "generated_by": {"command": f"instructeval induce --method {method}", "versions": versions()},
        "model": model,
        "model_args": {k: (v if isinstance(v, (str, int, float, bool)) or v is None else str(v)) for k, v in args_dict.items()},
        "model_label": label,
        "data_source": source,
        "split": "train (the evaluation split is never read)",
        "train_rows": len(rows),
        "settings": settings.for_method(method),
        "settings_fingerprint": settings_fp,
    }
