"""The run fingerprint: everything besides the protocol that changes a sweep's scores.

A resumed sweep skips a variant only when its saved results were computed by the same model on the
same data. The protocol (instruction, demos, settings, ...) is covered per variant by
``variant_fingerprint`` (``plan.py``); this module covers the rest, as plain named fields so that a
mismatch can say which field differs:

==========================  =================================================================
field                       value
==========================  =================================================================
``scoring_version``         ``SCORING_VERSION``; bumped when a plugin change alters scores
``backend``                 the harness backend (``hf``, ``instructeval-hf``, ``vllm``, ...)
``model_path``              ``pretrained`` (or ``model``) resolved to an absolute path when it
                            is a local folder, else the repo id / API model name as given
``model_revision``          ``revision`` from model_args; for a hub id found in the local HF
                            cache, the cached snapshot's commit
``model_files_sha256``      sha256 over the model folder's files (names, sizes, contents; files
                            over 32 MiB -- weight shards -- by three 1 MiB samples: start,
                            middle, end); None when there is no local folder (API backends)
``dtype``                   ``dtype`` (or ``torch_dtype``) from model_args; None when unset
``model_args``              every model_args key, local paths resolved
``data``                    per task: ``{"source": "local", "train_sha256", "eval_sha256"}``
                            (the full files) or ``{"source": "hf", "dataset_path",
                            "dataset_name", "revision"}``
==========================  =================================================================

``plugin_version`` is recorded beside them but not compared: only ``scoring_version`` marks a
version change that alters scores. ``--batch_size``, ``--device`` and ``--max_batch_size`` are not
model_args and are not compared (they change speed, not the computation's definition).

Example:
    >>> old = {"backend": "hf", "dtype": "float32", "data": {"agnews": {"eval_sha256": "a"}}}
    >>> new = {"backend": "hf", "dtype": "bfloat16", "data": {"agnews": {"eval_sha256": "b"}}}
    >>> differing_fields(old, new)
    [('data.agnews.eval_sha256', 'a', 'b'), ('dtype', 'float32', 'bfloat16')]
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterable

from .. import __version__
from ..data import DatasetNotFound, LOCAL_SPLIT_FILES
from ..models import sha256_of
from ..specs import get_spec

from ..fingerprint import RUN_FINGERPRINT_KEY, SCORING_VERSION  # noqa: F401  (the facts layer holds them)
NOT_COMPARED = ("plugin_version",)

_PATH_ARGS = ("pretrained", "tokenizer", "peft", "delta")
_FULL_HASH_MAX = 32 * 1024 * 1024
_SAMPLE = 1024 * 1024


def hash_model_folder(folder: Path) -> str:
    """sha256 over the folder's regular files (sorted relative names, sizes and contents).

    Files up to 32 MiB are read whole; larger ones (weight shards) contribute three 1 MiB samples
    (start, middle, end) besides their size: any retrained or re-quantised weights differ there,
    and a sweep start does not read gigabytes. ``folder`` may also be one file (a GGUF checkpoint).
    """
    digest = hashlib.sha256()
    if folder.is_file():
        files, root = [folder], folder.parent
    else:
        files, root = sorted(p for p in folder.rglob("*") if p.is_file() and not any(
            part.startswith(".") for part in p.relative_to(folder).parts)), folder
    for path in files:
        size = path.stat().st_size
        digest.update(f"{path.relative_to(root).as_posix()}\0{size}\0".encode())
        with path.open("rb") as handle:
            if size <= _FULL_HASH_MAX:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            else:
                for offset in (0, size // 2, size - _SAMPLE):
                    handle.seek(offset)
                    digest.update(handle.read(_SAMPLE))
    return digest.hexdigest()


def _local_path(value: Any) -> Path | None:
    if not isinstance(value, str) or not value:
        return None
    path = Path(value).expanduser()
    return path.resolve() if path.exists() else None


def _hub_snapshot(repo_id: str, revision: str | None) -> Path | None:
    """The cached snapshot folder of a hub model, if the local HF cache holds one (never downloads)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except Exception:  # an id that is no repo id, a broken cache: nothing to hash
        return None
    return Path(found).parent if isinstance(found, str) else None


def model_identity(backend: str, model_args: dict[str, Any]) -> dict[str, Any]:
    """The model fields of the run fingerprint (see the module table)."""
    args = {}
    for key, value in sorted(model_args.items()):
        local = _local_path(value) if key in _PATH_ARGS else None
        args[key] = str(local) if local else value
    name = model_args.get("pretrained") or model_args.get("model")
    revision = model_args.get("revision")
    folder = _local_path(name)
    if folder is None and isinstance(name, str) and name:
        folder = _hub_snapshot(name, revision)
        if folder is not None:
            revision = folder.name  # the cached commit
    files_sha = hash_model_folder(folder) if folder is not None else None
    dtype = model_args.get("dtype", model_args.get("torch_dtype"))
    return {
        "scoring_version": SCORING_VERSION,
        "plugin_version": __version__,
        "backend": backend,
        "model_path": str(_local_path(name) or name) if name else None,
        "model_revision": revision,
        "model_files_sha256": files_sha,
        "dtype": None if dtype is None else str(dtype),
        "model_args": args,
    }


def data_identity(task: str, data_dir: str | None) -> dict[str, Any]:
    """The data fields of one task: sha256 of its local files, or the HF dataset it names."""
    spec = get_spec(task)
    if spec.kind == "ii":
        return _ii_data_identity(task, data_dir)
    if spec.kind == "ni":
        return _ni_data_identity(task, data_dir)
    if data_dir:
        out: dict[str, Any] = {"source": "local"}
        for which, name in LOCAL_SPLIT_FILES.items():
            path = Path(data_dir) / spec.local_dir / name
            if not path.is_file():
                raise DatasetNotFound(
                    f"{spec.task_name}: no {which} split at {path}; a data directory holds "
                    f"<dir>/{spec.local_dir}/train.jsonl and eval.jsonl"
                )
            out[f"{which}_sha256"] = sha256_of(path)
        return out
    from ..task import base_task_config  # the YAML names the hub dataset

    cfg = base_task_config(task)
    kwargs = cfg.get("dataset_kwargs") or {}
    return {
        "source": "hf",
        "dataset_path": cfg.get("dataset_path"),
        "dataset_name": cfg.get("dataset_name"),
        "revision": kwargs.get("revision"),
    }


def _ii_data_identity(task: str, data_dir: str | None) -> dict[str, Any]:
    """An Instruction Induction task: sha256 of its local raw files, or the pinned commit it downloads."""
    from ..ii.names import source_name
    from ..ii.source import SOURCE_COMMIT, SPLITS, raw_path

    if not data_dir:
        return {"source": "download", "commit": SOURCE_COMMIT}
    out: dict[str, Any] = {"source": "local"}
    for split in SPLITS:  # raw_path raises IIDataNotFound naming the missing file
        out[f"{split}_sha256"] = sha256_of(raw_path(split, source_name(task), data_dir))
    return out


def _ni_data_identity(task: str, data_dir: str | None) -> dict[str, Any]:
    """A Natural Instructions task: sha256 of its task file (``task_path`` raises NIDataNotFound naming it)."""
    from ..ni.names import source_name
    from ..ni.source import task_path

    return {"source": "local", "task_file_sha256": sha256_of(task_path(source_name(task), data_dir))}


def run_fingerprint(backend: str, model_args: dict[str, Any], tasks: Iterable[str], data_dir: str | None) -> dict[str, Any]:
    """Model fields plus ``data`` per task: the fingerprint recorded in sweep.json."""
    return {**model_identity(backend, model_args), "data": {t: data_identity(t, data_dir) for t in tasks}}


def for_task(fingerprint: dict[str, Any], task: str) -> dict[str, Any]:
    """The fingerprint one variant of ``task`` records: the model fields and that task's data."""
    return {**{k: v for k, v in fingerprint.items() if k != "data"}, "data": {task: fingerprint["data"][task]}}


# A variant's metadata keys that are no part of its protocol: records, the run fingerprint's (checked
# on their own, ``differing_fields``), the budget's (their own message) and the model's arguments.
_NOT_PROTOCOL = frozenset({"sweep", "variant_fingerprint", RUN_FINGERPRINT_KEY, "model_label", "allow_truncation",
                           "budget", "truncation", "choice_token_counts", "pretrained", "tokenizer", "gguf_file",
                           "revision", "trust_remote_code"})
# planned into every variant's metadata from the profile, also recorded in its ``sweep``
_PLANNED_IN_SWEEP = ("order_mode", "perturbation_seed", "perturbation_mode", "test_seed", "instruction_text_sha")


def protocol_fields(metadata: dict[str, Any], num_fewshot: int | None = None) -> dict[str, Any]:
    """The fields of a variant's protocol, from its metadata: what its ``variant_fingerprint`` is
    computed from, as named fields, so that a refused resume can say which differ (``changed_fields``).

    ``num_fewshot`` (the variant's K: its config's, not in the planned metadata of the nine tasks'
    variants) is added when given. A saved variant's metadata holds the task's own record, which
    sets the fields that do not apply to the variant to None (no ordering: ``order_mode``): those
    fields, and the instruction's text (``instruction_text_sha``), are read from ``sweep``, which
    holds the values the variant was planned with.

        >>> protocol_fields({"test_sample": 4, "order_mode": None, "variant_fingerprint": "f",
        ...                  "sweep": {"n_selections": 2, "order_mode": "seeded", "instruction_text_sha": "ab"}}, 6)
        {'test_sample': 4, 'order_mode': 'seeded', 'instruction_text_sha': 'ab', 'num_fewshot': 6}
    """
    view = {k: v for k, v in metadata.items() if k not in _NOT_PROTOCOL}
    sweep = metadata.get("sweep")
    if isinstance(sweep, dict):
        view.update({k: sweep[k] for k in _PLANNED_IN_SWEEP if k in sweep})
    if num_fewshot is not None:
        view["num_fewshot"] = num_fewshot
    return view


def changed_fields(saved: dict[str, Any], planned: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(dotted field, saved value, planned value)`` of ``protocol_fields`` views that differ; only
    the planned fields are compared (a saved record also holds what the evaluation added to it).

        >>> changed_fields({"harness": {"num_fewshot": 2, "test_ids": [1]}}, {"harness": {"num_fewshot": 3}})
        [('harness.num_fewshot', 2, 3)]
    """
    flat_saved, flat_planned = _flatten(saved), _flatten(planned)
    return [(k, flat_saved.get(k), flat_planned[k]) for k in sorted(flat_planned) if flat_saved.get(k) != flat_planned[k]]


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}{key}."))
        return flat if flat or not prefix else {prefix[:-1]: {}}
    return {prefix[:-1]: value}


def differing_fields(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(dotted field, old value, new value)`` for every compared field that differs, sorted."""
    flat_old = {k: v for k, v in _flatten(old).items() if k.split(".")[0] not in NOT_COMPARED}
    flat_new = {k: v for k, v in _flatten(new).items() if k.split(".")[0] not in NOT_COMPARED}
    return [(k, flat_old.get(k), flat_new.get(k)) for k in sorted(set(flat_old) | set(flat_new))
            if flat_old.get(k) != flat_new.get(k)]
