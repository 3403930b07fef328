"""Where a sweep's results live, written so that an interrupted sweep loses nothing finished.

Layout: ``<output>/<model label>/``

- ``sweep.json``: the plan (profile, tasks, instructions, variant names, model) of the last start;
- per chunk (one task x instruction): ``samples_<variant>_<chunk>.jsonl`` for every variant, then
  ``results_<chunk>.json`` -- a standard lm-eval results file holding the chunk's variants;
- ``.instructeval.lock`` (+ ``.owner``) and ``.instructeval.store.lock``: the folder's locks (``lock``).

Every file is written to a temporary name and renamed into place, and the results file is renamed
last: it is the commit marker. A sweep killed at any point (Ctrl-C, ``kill -9``) leaves finished chunks
complete; at restart, variants found in results files with the planned fingerprint are skipped and
the unfinished chunk is recomputed, its stale sample files replaced.

A variant lives in one results file. A sweep that logs samples counts a saved variant whose samples
file is missing or empty (``unlogged``) as not done: it evaluates it again, and writing it removes
it from the results file that held it (``_write_chunk``). A results file written without samples
(``--no-log-samples``) records ``config.log_samples: false`` and its variants count as done.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

from filelock import FileLock

from lm_eval.utils import handle_non_serializable, sanitize_list
from instructeval_tasks.errors import UserError

from .identity import RUN_FINGERPRINT_KEY, changed_fields, differing_fields, protocol_fields
from .atomic_files import atomic_write_text
from .lock import store_lock
from .profiles import OPTION_OF


class SweepStoreError(UserError, RuntimeError):
    """The output folder holds something that conflicts with the planned sweep."""


class OutputPathError(UserError, ValueError):
    """A label, task name or id that would leave --output, or an --output that cannot be written."""


def model_label_from_args(model: str, model_args: str | dict | None) -> str:
    """A folder-safe label: the ``pretrained`` value's last path part, else the backend name."""
    args = model_args or {}
    if isinstance(args, str):
        args = dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    pretrained = str(args.get("pretrained") or args.get("model") or model)
    label = pretrained.rstrip("/").split("/")[-1]
    if label in ("", ".", ".."):  # e.g. pretrained=models/.. names the folder it resolves to
        label = Path(pretrained).expanduser().resolve().name
    label = re.sub(r"[^A-Za-z0-9_.-]+", "-", label)
    return model if label in ("", ".", "..") else label


def check_folder_name(name: str, what: str) -> str:
    """``name`` if it is one plain folder or file name (never a path that could leave its parent).

    >>> check_folder_name("smollm2-bf16", "--model-label")
    'smollm2-bf16'
    """
    if (not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name
            or (os.altsep and os.altsep in name) or Path(name).is_absolute()):
        raise OutputPathError(
            f"{what} {name!r} is not a plain folder name: it must stay inside --output, so no '/', '\\', "
            f"'..' or absolute path (e.g. --model-label smollm2-bf16)"
        )
    return name


def check_output(output: Path | str, label: str) -> Path:
    """The label folder ``<output>/<label>``, after checking that it can be a writable folder.

    Reads only (``--dry-run`` writes nothing): a file where a folder must be, or an existing folder
    the user may not write, is an error. A run also reports any OSError creating the folder.
    """
    out = Path(output).expanduser()
    folder = out / check_folder_name(label, "--model-label")
    for path in (folder, *folder.parents):
        if path.exists():
            if not path.is_dir():
                where = "--output" if path == out else ("the label folder" if path == folder else "a parent of --output")
                raise OutputPathError(f"--output {out}: {where} {path} is a file, not a folder; choose another --output")
            if not os.access(path, os.W_OK | os.X_OK):
                raise OutputPathError(f"--output {out}: {path} is not writable (permission denied); choose another --output")
            break
    return folder


def _short(value: Any) -> str:
    """A value for a one-line message: hashes by their first 12 digits, long values cut."""
    if isinstance(value, str) and len(value) >= 32 and re.fullmatch(r"[0-9a-f]+", value):
        return repr(value[:12] + "...")
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


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


# What ``atomic_write_text`` leaves when killed mid-write: mkstemp's ``.<name>.`` prefix and 8
# characters of [a-z0-9_], for the names the sweep writes (results, samples, plan, lock owner).
_TEMP_NAME = re.compile(r"^\.(?:results_.+\.json|samples_.+\.jsonl|sweep\.json|\.instructeval\.lock\.owner)\.[a-z0-9_]{8}$")
# ``samples_<variant>_<stamp>.jsonl`` as ``write_chunk`` names it (the stamp: ``%Y-%m-%dT%H-%M-%S.%f``)
_SAMPLES_NAME = re.compile(r"^samples_(.+)_(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d+)\.jsonl$")
# ``config`` key of a results file the sweep wrote: whether its variants' samples files were written
LOG_SAMPLES_KEY = "log_samples"
# the keys of a results file that map variant (task) names to values (lm-eval's per-task maps)
_PER_VARIANT_KEYS = ("results", "group_subtasks", "configs", "versions", "n-shot", "higher_is_better", "n-samples",
                     "task_hashes")


def _without_samples(data: dict[str, Any]) -> bool:
    """A results file written without samples files (``config.log_samples: false``)."""
    config = data.get("config")
    return isinstance(config, dict) and config.get(LOG_SAMPLES_KEY) is False


def _empty(path: Path) -> bool:
    """A samples file without a row (0 bytes, or blank lines only)."""
    try:
        size = path.stat().st_size
        return size == 0 or (size < 64 and not path.read_text(encoding="utf-8", errors="replace").strip())
    except OSError:
        return True


class SweepStore:
    """Reads and writes one model's sweep folder."""

    def __init__(self, output: Path | str, model_label: str) -> None:
        # Nothing is created here: a dry run reads the folder and writes nothing.
        self.output = Path(output).expanduser().resolve()
        self.root = self.output / check_folder_name(model_label, "--model-label")
        self._store_lock: FileLock | None = None

    def create(self) -> None:
        """Create the folder; an OSError (read-only place, no permission) becomes a one-line error."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise OutputPathError(f"--output {self.output}: cannot create {self.root} ({err.strerror}); choose another --output") from None

    def remove_if_unused(self, created: list[Path]) -> None:
        """Remove the folders in ``created`` (made by this run) that hold nothing but this run's plan
        and lock files: a run that failed before its first result leaves no empty folder behind."""
        def bookkeeping(name: str) -> bool:  # the plan; the run, store and shard locks (lock.py's names)
            return name == "sweep.json" or (name.startswith(".instructeval.") and name.endswith(".lock"))

        def claims(entry: Path) -> bool:  # the chunk claims of this run (``shards``): lock files only
            return entry.name == ".claims" and entry.is_dir() and all(c.name.endswith(".lock") for c in entry.iterdir())

        for folder in created:
            try:
                entries = list(folder.iterdir())
                if any(not (claims(e) if e.is_dir() else bookkeeping(e.name)) for e in entries):
                    return
                for entry in entries:
                    if entry.is_dir():
                        for claim in entry.iterdir():
                            claim.unlink()
                        entry.rmdir()
                    else:
                        entry.unlink()
                folder.rmdir()
            except OSError:
                return

    def inside(self, name: str) -> Path:
        """``root / name``, refusing a name that would resolve outside the folder."""
        path = self.root / check_folder_name(name, "a sweep file name")
        if path.resolve().parent != self.root.resolve():
            raise OutputPathError(f"{name!r} would be written outside {self.root}")
        return path

    def clean_temp_files(self) -> list[Path]:
        """Remove the temporary files an interrupted ``atomic_write_text`` left in the folder.

        Only names of our own pattern (``.<results/samples/sweep.json/owner file>.<8 mkstemp
        characters>``), only directly in this folder; call it under the run lock, when no other
        writer of the folder can be mid-write.
        """
        removed = []
        if self.root.is_dir():
            for path in sorted(self.root.iterdir()):
                if _TEMP_NAME.match(path.name) and path.is_file() and not path.is_symlink():
                    path.unlink()
                    removed.append(path)
        return removed

    @contextlib.contextmanager
    def updating(self) -> Iterator[None]:
        """Hold the short store lock (``lock.STORE_LOCK``) around a read-check-write of the folder.

        Re-entrant within one store object; the run lock (``lock.RunLock``) already excludes other
        runs, so today this only matters for writers that share a folder (shards, see ``lock``).
        """
        self.create()
        if self._store_lock is None:
            self._store_lock = store_lock(self.root)
        with self._store_lock:
            yield

    def results_path(self, chunk: str) -> Path:
        return self.inside(f"results_{chunk}.json")

    def _results_files(self, chunk: str | None = None) -> Iterator[tuple[Path, dict[str, Any]]]:
        """``(path, content)`` of every readable results file (of ``chunk``'s only, when given)."""
        if not self.root.is_dir():
            return
        for path in sorted(self.root.glob(f"results_{glob.escape(chunk)}__*.json" if chunk else "results_*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                # Only a hand-edited or foreign file can be unreadable: writes are atomic.
                continue
            if isinstance(data, dict):
                yield path, data

    def saved_variants(self, chunk: str | None = None) -> Iterable[tuple[Path, str, dict[str, Any]]]:
        """``(results file, variant name, metadata)`` of every variant in a readable results file (of
        ``chunk``'s results files only, when given: a claimed chunk is re-read alone, see ``shards``)."""
        for path, data in self._results_files(chunk):
            for name, cfg in (data.get("configs") or {}).items():
                if name in (data.get("results") or {}):
                    yield path, name, (cfg.get("metadata") or {})

    def begun_design(self) -> str | None:
        """The ``--budget-design`` of the budgeted cells saved here (a design's own record, not a
        round's), or None when none is saved; a record without a design is the uniform design's."""
        for _, _, meta in self.saved_variants():
            budget = meta.get("budget")
            if isinstance(budget, dict) and not budget.get("round") and budget.get("extend") is None:
                return str(budget.get("design", "uniform"))
        return None

    def saved_extensions(self) -> list[float]:
        """The shares of the ``--budget-extend`` rounds saved here (their ``budget.extend``), sorted."""
        shares = set()
        for _, _, meta in self.saved_variants():
            budget = meta.get("budget")
            if isinstance(budget, dict) and isinstance(budget.get("extend"), (int, float)):
                shares.add(float(budget["extend"]))
        return sorted(shares)

    def finished(self, chunk: str | None = None, *, logged: bool = False) -> dict[str, str]:
        """``{variant name: fingerprint}`` of every variant in a readable results file (of ``chunk``'s only);
        with ``logged``, those that ``unlogged`` names left out (a run that logs samples redoes them)."""
        done: dict[str, str] = {}
        for _, name, meta in self.saved_variants(chunk):
            fp = meta.get("variant_fingerprint")
            if fp:
                done[name] = fp
        if logged:
            for name in self.unlogged(chunk):
                done.pop(name, None)
        return done

    def samples_files(self) -> dict[str, list[Path]]:
        """``{variant name: its samples files}`` in the folder (one listing of it)."""
        found: dict[str, list[Path]] = {}
        if self.root.is_dir():
            for entry in os.scandir(self.root):
                match = _SAMPLES_NAME.match(entry.name)
                if match and entry.is_file():
                    found.setdefault(match.group(1), []).append(Path(entry.path))
        return found

    def unlogged(self, chunk: str | None = None) -> dict[str, tuple[Path, str]]:
        """``{variant: (its results file, "missing" or "empty")}``: the saved variants (of ``chunk``'s
        results files only, when given) whose samples file is missing or holds no row, in a results
        file that was written with samples (every file but those recording ``config.log_samples: false``)."""
        saved = [(path, name) for path, data in self._results_files(chunk) if not _without_samples(data)
                 for name in data.get("results") or {} if name in (data.get("configs") or {})]
        logs = self.samples_files() if saved else {}
        out: dict[str, tuple[Path, str]] = {}
        for path, name in saved:
            files = logs.get(name)
            if not files:
                out[name] = (path, "missing")
            elif all(_empty(f) for f in files):
                out[name] = (path, "empty")
        return out

    def written_without_samples(self, names: Iterable[str]) -> list[str]:
        """Those of ``names`` saved in a results file written without samples (``--no-log-samples``)."""
        wanted = set(names)
        return sorted(name for _, data in self._results_files() if _without_samples(data)
                      for name in data.get("results") or {} if name in wanted)

    def check_run(self, run_fingerprint: dict[str, Any]) -> None:
        """Refuse when any saved variant was computed by another model, backend, dtype, model_args,
        data content or scoring version than ``run_fingerprint`` (``identity.run_fingerprint``).

        Every saved result is checked, planned or not: one label folder holds one model's results.
        Data fields are compared for the tasks both runs have.
        """
        for path, name, meta in self.saved_variants():
            saved = meta.get(RUN_FINGERPRINT_KEY)
            if not isinstance(saved, dict):
                raise SweepStoreError(
                    f"{self.root} holds results saved without a run fingerprint ({path.name}, from an older "
                    f"version), so they cannot be checked against this model and data; use another --output "
                    f"or --model-label, or delete {self.root} to recompute"
                )
            current = dict(run_fingerprint)
            tasks = set((saved.get("data") or {})) & set(current.get("data") or {})
            saved = {**saved, "data": {t: saved["data"][t] for t in tasks}}
            current["data"] = {t: current["data"][t] for t in tasks}
            diffs = differing_fields(saved, current)
            if diffs:
                shown = "; ".join(f"{field}: old {_short(old)} vs new {_short(new)}" for field, old, new in diffs[:3])
                more = f" (+{len(diffs) - 3} more)" if len(diffs) > 3 else ""
                raise SweepStoreError(
                    f"{self.root} holds results of another model or data ({path.name}): {shown}{more}; "
                    f"use another --output or --model-label for this run, or delete {self.root} to recompute"
                )

    def check_conflicts(self, planned: dict[str, str], done: dict[str, str],
                        budget: dict[str, Any] | None = None, protocols: dict[str, dict[str, Any]] | None = None) -> None:
        """Refuse planned variants whose saved results have another fingerprint (protocol); when the
        saved ones were run under another ``--budget`` than ``budget`` (this run's record, or None),
        the message names both budgets. ``protocols``: the planned variants' ``identity.protocol_fields``,
        whose fields that differ from the saved ones the message names (old -> new)."""
        clashes = sorted(n for n, fp in planned.items() if n in done and done[n] != fp)
        if not clashes:
            return
        saved_budget = next((meta.get("budget") for _, name, meta in self.saved_variants() if name == clashes[0]), None)
        saved_words, asked_words = _budget_words(saved_budget, budget), _budget_words(budget, saved_budget)
        if saved_words != asked_words:
            raise SweepStoreError(
                f"{self.root} holds {clashes[0]} (and {len(clashes) - 1} more planned variant(s)) computed with "
                f"{saved_words}; this run asks for {asked_words}: budgeted and full results "
                f"are different protocols. Use another --output, or rerun with the same budget"
                + _extend_hint(saved_budget, budget)
            )
        if isinstance(saved_budget, dict) and saved_budget.get("round"):
            raise SweepStoreError(
                f"{self.root} holds adaptive round {saved_budget['round']} of {clashes[0].rsplit('__r', 1)[0]} (and "
                f"{len(clashes) - 1} more planned variant(s)) on other cells than this version derives from the same "
                f"saved cells (planned by an earlier version's allocation, or edited). Use another --output, "
                f"or delete the results and samples files of the grid's rounds (variants ending in __r1, __r2) to "
                f"replan them"
            )
        first = clashes[0]
        saved = self._saved_protocol(first)
        changes = changed_fields(saved, protocols[first]) if saved is not None and protocols and first in protocols else []
        if not changes:
            raise SweepStoreError(
                f"{self.root} holds results of a different protocol for {len(clashes)} planned variant(s), "
                f"e.g. {first}; use another --output, or delete those results files to recompute them"
            )
        shown = "; ".join(f"{field} {_short(old)} -> {_short(new)}" for field, old, new in changes[:3])
        more = f" (+{len(changes) - 3} more)" if len(changes) > 3 else ""
        flags = [flag for flag in (_resume_flag(field, old, protocols[first]) for field, old, _ in changes) if flag]
        resume = (f"rerun with the folder's values ({' '.join(dict.fromkeys(flags))}) to resume it"
                  if flags else "rerun with the options it was run with (its sweep.json) to resume it")
        raise SweepStoreError(
            f"{self.root} holds results of a different protocol for {len(clashes)} planned variant(s), e.g. "
            f"{first}: {shown}{more} (saved -> this run); {resume}, use another --output for the new protocol, "
            f"or delete those results files to recompute them"
        )

    def _saved_protocol(self, name: str) -> dict[str, Any] | None:
        """``identity.protocol_fields`` of the saved variant ``name`` (its K from its config), or None."""
        for _, data in self._results_files():
            cfg = (data.get("configs") or {}).get(name)
            if isinstance(cfg, dict) and name in (data.get("results") or {}):
                shots = cfg.get("num_fewshot")
                return protocol_fields(cfg.get("metadata") or {}, shots if isinstance(shots, int) else None)
        return None

    def write_chunk(self, chunk: str, results: dict[str, Any], samples: dict[str, list[dict]], stamp: str) -> Path:
        """Write the chunk's sample files, then its results file (the commit marker)."""
        with self.updating():
            return self._write_chunk(chunk, results, samples, stamp)

    def _write_chunk(self, chunk: str, results: dict[str, Any], samples: dict[str, list[dict]], stamp: str) -> Path:
        config = results.get("config")
        if isinstance(config, dict):
            config[LOG_SAMPLES_KEY] = bool(samples)
        for variant in samples:
            # the stamp starts with a digit: another variant whose name extends this one (an adaptive
            # round, "<name>__r1") is not matched
            for stale in self.root.glob(f"samples_{variant}_[0-9]*.jsonl"):
                stale.unlink()
        for variant, rows in samples.items():
            lines = "".join(
                json.dumps(harness_sample_row(row), default=handle_non_serializable, ensure_ascii=False) + "\n"
                for row in sorted(rows, key=lambda r: r.get("doc_id", 0))
            )
            atomic_write_text(self.inside(f"samples_{variant}_{stamp}.jsonl"), lines)
        path = self.results_path(chunk)
        self._drop_elsewhere(chunk, path, set(results.get("results") or {}))
        atomic_write_text(path, json.dumps(results, indent=2, default=handle_non_serializable, ensure_ascii=False))
        return path

    def _drop_elsewhere(self, chunk: str, path: Path, names: set[str]) -> None:
        """Remove ``names`` from the chunk's other results files (a variant evaluated again because
        its samples file was missing): each variant stays in one results file. A file left with no
        variant is deleted. Runs before the new results file is committed: a sweep killed between
        the two finds the variants not done, and evaluates them again."""
        if not names:
            return
        prefix = chunk.rsplit("__", 1)[0]  # a job key is <chunk>__<hash>
        for other, data in self._results_files(prefix):
            if other == path:
                continue
            held = set(data.get("results") or {}) & names
            if not held:
                continue
            for key in _PER_VARIANT_KEYS:
                if isinstance(data.get(key), dict):
                    data[key] = {k: v for k, v in data[key].items() if k not in held}
            if data.get("results"):
                atomic_write_text(other, json.dumps(data, indent=2, default=handle_non_serializable, ensure_ascii=False))
            else:
                other.unlink()

    def write_plan(self, plan: dict[str, Any]) -> None:
        with self.updating():
            atomic_write_text(self.root / "sweep.json", json.dumps(plan, indent=2, default=str, ensure_ascii=False))

    def result_files(self) -> Iterable[Path]:
        return sorted(self.root.glob("results_*.json"))


# the command-line options of protocol fields (``identity.protocol_fields``), to say how to resume
_PROTOCOL_FLAGS = {
    **{field: OPTION_OF[field] for field in ("num_fewshot", "test_sample", "test_seed", "truncate_words", "order_mode",
                                             "perturbation_seed", "perturbation_mode")},
    "data_dir": "--data-dir", "bank_dir": "--bank-dir",
    "harness.test_sample": OPTION_OF["test_sample"], "harness.test_seed": OPTION_OF["test_seed"],
}


def _resume_flag(field: str, old: Any, planned: dict[str, Any]) -> str | None:
    """The option that gives ``field`` the folder's value ``old`` again, or None (no option sets it).

        >>> _resume_flag("harness.num_fewshot", 2, {"harness": {"task": "hellaswag"}})
        '--harness-tasks hellaswag:2'
        >>> _resume_flag("test_sample", 4, {}), _resume_flag("instruction_text_sha", "ab", {})
        ('--test-sample 4', None)
    """
    if old is None or isinstance(old, (dict, list)):
        return None
    if field.endswith("fewshot_as_multiturn") and isinstance(old, bool):
        return "--fewshot-as-multiturn" if old else "--no-fewshot-as-multiturn"
    if field == "harness.num_fewshot":
        return f"--harness-tasks {(planned.get('harness') or {}).get('task')}:{old}"
    flag = _PROTOCOL_FLAGS.get(field)
    return f"{flag} {old}" if flag else None


# the options of a budget record beside fraction and seed, as the command line spells them; a record
# without "design" is a uniform one (written before there were designs)
_BUDGET_OPTIONS = (("design", "--budget-design", "uniform"), ("min_items", "--budget-min-items", None),
                   ("full_methods", "--budget-full-methods", None))


def _extend_hint(saved: Any, asked: Any) -> str:
    """The conflict message's tail when the run asks a larger share than the folder's, all else equal:
    ``--budget-extend`` adds the cells, keeping the saved ones."""
    if not isinstance(saved, dict) or not isinstance(asked, dict):
        return ""
    share, wanted = saved.get("fraction"), asked.get("fraction")
    same = all(saved.get(key) == asked.get(key) for key in ("seed", "design", "min_items", "full_methods"))
    if not (same and isinstance(share, (int, float)) and isinstance(wanted, (int, float)) and share < wanted):
        return ""
    return f" (to add cells to these grids keeping the saved ones: --budget {share:g} --budget-extend {wanted:g})"


def _budget_words(budget: Any, other: Any = None) -> str:
    """``--budget 0.1 (seed 0)`` of a variant's or a sweep's budget record; ``no --budget (the full grid)``.

    The options in which it differs from the budget record ``other`` follow, e.g. ``--budget 0.1
    (seed 0, --budget-design uniform)``: a resume refused for the design alone names the design.
    """
    if not isinstance(budget, dict):
        return "no --budget (the full grid)"
    differ = []
    if isinstance(other, dict):
        for key, flag, missing in _BUDGET_OPTIONS:
            mine, theirs = budget.get(key, missing), other.get(key, missing)
            if mine != theirs:
                shown = (",".join(mine) or "''") if isinstance(mine, (list, tuple)) else mine
                differ.append(f"{flag} {shown}")
    return f"--budget {budget.get('fraction')} (seed {budget.get('seed')}{''.join(', ' + d for d in differ)})"
