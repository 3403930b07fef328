"""Where a sweep's results live, written so that an interrupted sweep loses nothing finished.

Layout: ``<output>/<model label>/``

- ``sweep.json``: the plan (profile, tasks, instructions, variant names, model) of the last start;
- per chunk (one task x instruction): ``samples_<variant>_<chunk>.jsonl`` for every variant, then
  ``results_<chunk>.json`` -- a standard lm-eval results file holding the chunk's variants.

Every file is written to a temporary name and renamed into place, and the results file is renamed
last: it is the commit marker. A sweep killed at any point (Ctrl-C, ``kill -9``) leaves finished chunks
complete; at restart, variants found in results files with the planned fingerprint are skipped and
the unfinished chunk is recomputed, its stale sample files replaced.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Iterable

from lm_eval.utils import handle_non_serializable, sanitize_list
from instructeval_tasks.errors import UserError


class SweepStoreError(UserError, RuntimeError):
    """The output folder holds something that conflicts with the planned sweep."""


def model_label_from_args(model: str, model_args: str | dict | None) -> str:
    """A folder-safe label: the ``pretrained`` value's last path part, else the backend name."""
    args = model_args or {}
    if isinstance(args, str):
        args = dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    pretrained = args.get("pretrained") or args.get("model") or model
    label = str(pretrained).rstrip("/").split("/")[-1]
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", label) or model


def harness_sample_row(sample: dict[str, Any]) -> dict[str, Any]:
    """A sample as ``lm_eval``'s EvaluationTracker writes it (``gen_args_i.arg_j``, string resps)."""
    row = dict(sample)
    row["arguments"] = {
        f"gen_args_{i}": {f"arg_{j}": value for j, value in enumerate(args)}
        for i, args in enumerate(sample.get("arguments") or [])
    }
    row["resps"] = sanitize_list(sample.get("resps", []))
    row["filtered_resps"] = sanitize_list(sample.get("filtered_resps", []))
    row["target"] = str(sample.get("target"))
    return row


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        # mkstemp creates 0600 files; results are ordinary files, so apply the usual umask.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class SweepStore:
    """Reads and writes one model's sweep folder."""

    def __init__(self, output: Path | str, model_label: str) -> None:
        self.root = Path(output).expanduser().resolve() / model_label
        self.root.mkdir(parents=True, exist_ok=True)

    def results_path(self, chunk: str) -> Path:
        return self.root / f"results_{chunk}.json"

    def finished(self, chunk: str | None = None) -> dict[str, str]:
        """``{variant name: fingerprint}`` of every variant in a readable results file (of ``chunk``'s
        results files only, when given: a shard's claim re-reads one chunk)."""
        done: dict[str, str] = {}
        pattern = f"results_{chunk}__*.json" if chunk else "results_*.json"
        for path in sorted(self.root.glob(pattern)):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                # Only a hand-edited or foreign file can be unreadable: writes are atomic.
                continue
            for name, cfg in (data.get("configs") or {}).items():
                fp = (cfg.get("metadata") or {}).get("variant_fingerprint")
                if name in (data.get("results") or {}) and fp:
                    done[name] = fp
        return done

    def check_conflicts(self, planned: dict[str, str], done: dict[str, str]) -> None:
        clashes = sorted(n for n, fp in planned.items() if n in done and done[n] != fp)
        if clashes:
            raise SweepStoreError(
                f"{self.root} holds results of a different protocol for {len(clashes)} planned variant(s), "
                f"e.g. {clashes[0]}; use another --output, or delete those results files to recompute them"
            )

    def write_chunk(self, chunk: str, results: dict[str, Any], samples: dict[str, list[dict]], stamp: str) -> Path:
        """Write the chunk's sample files, then its results file (the commit marker)."""
        for variant in samples:
            for stale in self.root.glob(f"samples_{variant}_*.jsonl"):
                stale.unlink()
        for variant, rows in samples.items():
            lines = "".join(
                json.dumps(harness_sample_row(row), default=handle_non_serializable, ensure_ascii=False) + "\n"
                for row in sorted(rows, key=lambda r: r.get("doc_id", 0))
            )
            atomic_write_text(self.root / f"samples_{variant}_{stamp}.jsonl", lines)
        path = self.results_path(chunk)
        atomic_write_text(path, json.dumps(results, indent=2, default=handle_non_serializable, ensure_ascii=False))
        return path

    def write_plan(self, plan: dict[str, Any]) -> None:
        atomic_write_text(self.root / "sweep.json", json.dumps(plan, indent=2, default=str, ensure_ascii=False))

    def result_files(self) -> Iterable[Path]:
        return sorted(self.root.glob("results_*.json"))
