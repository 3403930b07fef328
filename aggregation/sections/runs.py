"""The results files read, with each run's protocol."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from .base import Figures, Section


class RunsSection(Section):
    name = "runs"

    def html(self, result: Any, figures: Figures) -> str:
        runs = pd.DataFrame([{
            "file": r.file, "model": r.model, "variants": r.n_variants, "tasks": ", ".join(r.tasks), "profile": r.profile,
            "sweep": json.dumps(dict(r.sweep), sort_keys=True, default=str), "lm_eval": r.lm_eval_version,
            "plugin": r.plugin_version, "limit": r.limit,
        } for r in result.runs])
        if runs.empty:
            return ""
        return "\n".join(["<h2>Runs and their protocol</h2>", figures.frame_html(runs)])
