"""Synthetic results and samples files in exactly the layout the sweep runner writes (for tests).

Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> v = SyntheticVariant("agnews", "generic", "generic-0", "zero_shot", correct=[1, 0, 1, 1])
    >>> path = write_run(folder, "SmolLM2-135M", [v])
    >>> path.name
    'results_2024-01-01T00-00-00.000000.json'
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .catalog import TASK_KIND

DEFAULT_STAMP = "2024-01-01T00-00-00.000000"


def sweep_record(
    profile: str = "test",
    *,
    n_selections: int = 3,
    n_orderings: int = 3,
    ordering_demo_seeds: Sequence[int] = (0,),
    instructions_per_method: int = 5,
    num_fewshot: int = 6,
    **extra: Any,
) -> dict[str, Any]:
    """A ``sweep`` metadata record (the protocol a run used)."""
    return {
        "profile": profile,
        "num_fewshot": num_fewshot,
        "n_selections": n_selections,
        "n_perturbed_selections": n_selections,
        "n_orderings": n_orderings,
        "ordering_demo_seeds": list(ordering_demo_seeds),
        "instructions_per_method": instructions_per_method,
        "ddof": 1,
        **extra,
    }


@dataclass
class SyntheticVariant:
    """One variant. Give ``correct`` (per-item 0/1 values; metric = their mean) or ``value``.

    ``metrics`` overrides individual metric values (e.g. ``{"acc_per_token": None}`` removes it).
    """

    task: str
    method: str
    instruction_id: str
    setting: str = "zero_shot"
    demo_seed: int | None = None
    order_seed: int | None = None
    value: float | None = None
    correct: Sequence[float] | None = None
    num_fewshot: int | None = None
    perturbation_seed: int = 0
    instruction_text: str | None = None
    metrics: dict[str, float | None] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    drop_metadata: tuple[str, ...] = ()
    doc_ids: Sequence[int] | None = None  # items of ``correct`` (default 0..len-1): a budgeted variant's cells
    gold_ll: Sequence[float] | None = None  # per-item log-likelihood of the gold choice (default -1.0)
    n_test: int | None = None  # test sample size (default len(correct))
    targets: Sequence[str] | None = None  # each item's gold ``target`` in the samples (default "0")
    label_scores: Sequence[Sequence[float]] | None = None  # per item, every label's log-likelihood (default: one choice)
    labels: Sequence[str] = (" a",)  # the labels' continuations, with ``label_scores``

    @property
    def task_type(self) -> str:
        return TASK_KIND.get(self.task, "cls")

    @property
    def name(self) -> str:
        code = {"zero_shot": "zs", "few_shot": f"fs-d{self.demo_seed}", "perturbed": f"pt-d{self.demo_seed}"}.get(
            self.setting, f"or-d{self.demo_seed}-o{self.order_seed}"
        )
        return f"instructeval_{self.task}__{self.instruction_id}__{code}"

    def metric_value(self) -> float:
        if self.value is not None:
            return float(self.value)
        if self.correct is not None:
            return math.fsum(float(c) for c in self.correct) / len(self.correct)
        raise ValueError("a SyntheticVariant needs value or correct")

    def metric_values(self) -> dict[str, float]:
        names = ("quasi_exact_match",) if self.task_type == "gqa" else ("acc", "acc_norm", "acc_per_token")
        out = {n: self.metric_value() for n in names}
        for key, val in self.metrics.items():
            if val is None:
                out.pop(key, None)
            else:
                out[key] = float(val)
        return out


def variant_metadata(v: SyntheticVariant, *, sweep: dict | None, test_ids: Sequence[int] | None, pretrained: str | None) -> dict[str, Any]:
    text = v.instruction_text if v.instruction_text is not None else ("" if v.method == "null" else f"{v.method} instruction {v.instruction_id}")
    k = v.num_fewshot if v.num_fewshot is not None else (0 if v.setting == "zero_shot" else 6)
    meta = {
        "version": 1.0,
        "instructeval_task": v.task,
        "task_type": v.task_type,
        "method": v.method,
        "instruction_id": v.instruction_id,
        "instruction_index": 0,
        "instruction_sha": hashlib.sha256(text.encode()).hexdigest()[:16],
        "instruction_text": text,
        "num_fewshot": k,
        "setting": v.setting,
        "demo_seed": 0 if v.demo_seed is None else v.demo_seed,
        "order_seed": v.order_seed,
        "perturbation": "mild_mix" if v.setting == "perturbed" else None,
        "perturbation_seed": v.perturbation_seed if v.setting == "perturbed" else None,
        "test_sample": 100,
        "test_seed": 0,
        "test_ids": list(test_ids) if test_ids is not None else None,
        "truncate_words": None,
        "template_sha": f"tmpl-{v.task}",
        "data_source": f"local:{v.task}",
        "plugin_version": "0.1.0",
        "sweep": dict(sweep) if sweep is not None else sweep_record(),
    }
    if pretrained:
        meta["pretrained"] = pretrained
    meta.update(v.metadata)
    for key in v.drop_metadata:
        meta.pop(key, None)
    return meta


def make_results(
    model: str,
    variants: Iterable[SyntheticVariant],
    *,
    sweep: dict | None = None,
    pretrained: str | None = None,
    model_num_parameters: int | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A harness results JSON object (harness.md §14.2) holding ``variants``."""
    pretrained = pretrained or f"/models/{model}"
    results: dict[str, Any] = {}
    configs: dict[str, Any] = {}
    n_samples: dict[str, Any] = {}
    for v in variants:
        n = len(v.correct) if v.correct is not None else 100
        test_ids = list(range(v.n_test if v.n_test is not None else n))
        entry: dict[str, Any] = {"name": v.name, "alias": v.name, "sample_len": n}
        for metric, value in v.metric_values().items():
            entry[f"{metric},none"] = value
            entry[f"{metric}_stderr,none"] = math.sqrt(max(value * (1 - value), 0.0) / max(n - 1, 1))
        results[v.name] = entry
        configs[v.name] = {
            "task": v.name,
            "output_type": "generate_until" if v.task_type == "gqa" else "multiple_choice",
            "num_fewshot": v.num_fewshot if v.num_fewshot is not None else (0 if v.setting == "zero_shot" else 6),
            "metadata": variant_metadata(v, sweep=sweep, test_ids=test_ids, pretrained=pretrained),
        }
        n_samples[v.name] = {"original": n, "effective": n}
    data = {
        "results": results,
        "group_subtasks": {},
        "configs": configs,
        "versions": {name: 1.0 for name in results},
        "n-shot": {name: configs[name]["num_fewshot"] for name in results},
        "higher_is_better": {name: {m.split(",")[0]: True for m in results[name] if "," in m and "stderr" not in m} for name in results},
        "n-samples": n_samples,
        "config": {
            "model": "hf",
            "model_args": f"pretrained={pretrained},dtype=bfloat16",
            "model_num_parameters": model_num_parameters,
            "batch_size": "8",
            "limit": None,
            "bootstrap_iters": 0,
            "random_seed": 0,
            "fewshot_seed": 1234,
        },
        "git_hash": None,
        "date": 1704067200.0,
        "lm_eval_version": "0.4.13",
        "model_name": pretrained,
        "model_name_sanitized": pretrained.replace("/", "__"),
    }
    data.update(extra or {})
    return data


def sample_lines(v: SyntheticVariant) -> list[dict[str, Any]]:
    """Per-sample records (harness.md §14.3) for a variant with ``correct``."""
    if v.correct is None:
        raise ValueError("sample logs need per-item values (correct=...)")
    names = list(v.metric_values())
    rows = []
    doc_ids = list(v.doc_ids) if v.doc_ids is not None else list(range(len(v.correct)))
    gold = list(v.gold_ll) if v.gold_ll is not None else [-1.0] * len(v.correct)
    targets = list(v.targets) if v.targets is not None else ["0"] * len(v.correct)
    scores = [list(row) for row in v.label_scores] if v.label_scores is not None else [[ll] for ll in gold]
    for doc_id, c, lls, target in zip(doc_ids, v.correct, scores, targets):
        row = {
            "doc_id": doc_id,
            "doc": {"id": doc_id, "text": f"item {doc_id}"},
            "target": target,
            "arguments": {f"gen_args_{k}": {"arg_0": "ctx", "arg_1": label} for k, label in enumerate(v.labels)},
            "resps": [[[repr(float(ll)), "False"]] for ll in lls],
            "filtered_resps": [[repr(float(ll)), "False"] for ll in lls],
            "filter": "none",
            "metrics": names,
            "doc_hash": f"d{doc_id}",
            "prompt_hash": "p",
            "target_hash": "t",
        }
        for name in names:
            row[name] = float(c) if name != "acc" else bool(c)  # the harness writes booleans for some metrics
        rows.append(row)
    return rows


def write_run(
    folder: str | Path,
    model: str,
    variants: Sequence[SyntheticVariant],
    *,
    stamp: str = DEFAULT_STAMP,
    samples: bool = True,
    sweep: dict | None = None,
    pretrained: str | None = None,
    model_num_parameters: int | None = None,
    extra: dict[str, Any] | None = None,
    subdir: bool = True,
) -> Path:
    """Write ``<folder>/<model>/results_<stamp>.json`` and (``samples``) ``samples_<T>_<stamp>.jsonl``."""
    out = Path(folder) / model if subdir else Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    data = make_results(model, variants, sweep=sweep, pretrained=pretrained, model_num_parameters=model_num_parameters, extra=extra)
    path = out / f"results_{stamp}.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    if samples:
        for v in variants:
            if v.correct is None:
                continue
            lines = "".join(json.dumps(r) + "\n" for r in sample_lines(v))
            (out / f"samples_{v.name}_{stamp}.jsonl").write_text(lines, encoding="utf-8")
    return path


def grid(
    tasks: Sequence[str],
    instructions: Sequence[tuple[str, str]],
    accuracy: Callable[..., float | Sequence[float]],
    *,
    n_selections: int = 3,
    ordering_demo_seeds: Sequence[int] = (0,),
    n_orderings: int = 3,
    settings: Sequence[str] = ("zero_shot", "few_shot", "perturbed", "ordering"),
) -> list[SyntheticVariant]:
    """Every variant of a small sweep; ``accuracy(task, method, iid, setting, demo_seed, order_seed)``
    returns a value or per-item values."""
    out = []
    for task in tasks:
        for method, iid in instructions:
            specs: list[tuple[str, int | None, int | None]] = []
            if "zero_shot" in settings:
                specs.append(("zero_shot", None, None))
            for s in range(n_selections):
                if "few_shot" in settings:
                    specs.append(("few_shot", s, None))
                if "perturbed" in settings:
                    specs.append(("perturbed", s, None))
            if "ordering" in settings:
                for d in ordering_demo_seeds:
                    for o in range(1, n_orderings + 1):
                        specs.append(("ordering", d, o))
            for setting, demo, order in specs:
                value = accuracy(task, method, iid, setting, demo, order)
                if isinstance(value, (int, float)):
                    out.append(SyntheticVariant(task, method, iid, setting, demo, order, value=float(value)))
                else:
                    out.append(SyntheticVariant(task, method, iid, setting, demo, order, correct=list(value)))
    return out


HARNESS_STAMP = "2026-01-01T00-00-00.000000"


def write_harness_run(folder: Path, model: str, task: str, per_instruction: dict[str, list[int]], *, shot: int = 0,
           metric: str = "acc", filt: str = "none") -> None:
    """A results file and samples logs in the layout ``instructeval run --harness-tasks`` writes."""
    out = folder / model
    out.mkdir(parents=True, exist_ok=True)
    results, configs = {}, {}
    for iid, correct in per_instruction.items():
        name = f"{task}__{iid}"
        results[name] = {"alias": name, f"{metric},{filt}": sum(correct) / len(correct), f"{metric}_stderr,{filt}": 0.1}
        configs[name] = {"task": name, "metric_list": [{"metric": metric}], "metadata": {
            "model_label": model,
            "harness": {"task": task, "num_fewshot": shot, "method": "null" if iid == "null" else "generic",
                        "instruction_id": iid, "instruction": "" if iid == "null" else f"text {iid}",
                        "placement": "description", "test_ids": list(range(len(correct)))}}}
        lines = [json.dumps({"doc_id": d, "filter": filt, metric: float(c), "target": "0",
                             "filtered_resps": [["-1.0", "False"]]}) for d, c in enumerate(correct)]
        (out / f"samples_{name}_{HARNESS_STAMP}.jsonl").write_text("\n".join(lines) + "\n")
    (out / f"results_harness__{task}.json").write_text(json.dumps({
        "results": results, "configs": configs, "config": {"model": "hf", "model_args": f"pretrained={model}"},
        "versions": {}, "n-shot": {}}))
