"""The Natural Instructions report: scores per task and per category, and the effect of each schema part.

Reads the variants of the ``instructeval_ni_*`` tasks (task metadata ``task_type: ni``; ``instructeval run
--tasks ni`` writes them) from results files and their per-sample logs. An instruction is labelled by its
header encoding (method ``ni_header``: ``definition``, ``definition_pos2``, ...), ``null`` (no
instruction) or its bank id (``generic-0``, ...).

- **Scores** (``scores``): per (model, task, instruction), ``exact_match`` and ``rougeL``, the means of
  the benchmark's per-instance values as the results file gives them (fractions; SuperNI prints them
  times 100), with the instance count. Per category (``categories``): the mean over the category's
  tasks (the results' ``ni_category``, the task file's ``Categories``) of the task means.
- **Schema-part effects** (``effects``): for each part of ``SCHEMA_PARTS`` (encoding A minus encoding
  B, e.g. ``definition_pos2 - definition``: the 2 positive examples), per (model, task, metric) the
  mean over the instances both variants scored of ``value_A - value_B``, with a paired percentile
  bootstrap interval: each replicate draws the task's instances with replacement
  (``bootstrap.resample_counts``; generator ``bootstrap.rng_for(seed, "ni", model, task, instance
  ids)``, the same draw for every part and metric of the task, so the intervals are paired). Per
  category the effect is the mean of its tasks' effects, each replicate the mean of the tasks'
  replicates (tasks resampled independently). A part whose two encodings are not both present (an
  encoding not planned because it repeats another's text, or not run) has no row.
- **Power** (``detectable``): ``(z_{1 - alpha/2} + z_{power}) SE`` with ``alpha = 0.05``, 80% power and
  ``SE`` the standard deviation of the effect's bootstrap replicates: the smallest true effect the
  paired comparison finds with that power, so an interval covering 0 says "no effect" only up to it;
  none (NaN) where every replicate is the same (all paired differences equal: no spread to scale).

Example:
    >>> [part.name for part in SCHEMA_PARTS][:3]
    ['definition', '2 positive examples', '2 negative examples']
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from instructeval_tasks.encodings import NI_ENCODINGS
from instructeval_tasks.ni.names import NI_TASKS, ni_id
from instructeval_tasks.ni.normalize import normalize_answer

from .bootstrap import resample_counts, rng_for
from .harness_methods import ALPHA, DETECTABLE_Z, POWER
from .issues import IssueLog
from .json_input import BadJson, parse_json_bytes, parse_json_line
from .loading import expand_paths, find_samples, label_from_pretrained, parse_model_args, results_stamp

NI_TASK_TYPE = "ni"
MIN_PAIRED = 10  # paired instances below which an effect has no interval and is no headline
METRICS = ("exact_match", "rougeL")
NULL = "null"


@dataclass(frozen=True)
class SchemaPart:
    """The effect of one part of the header: encoding ``with_part`` minus encoding ``without``."""

    name: str
    with_part: str
    without: str


SCHEMA_PARTS: tuple[SchemaPart, ...] = (
    SchemaPart("definition", "definition_pos2", "pos2"),
    SchemaPart("2 positive examples", "definition_pos2", "definition"),
    SchemaPart("2 negative examples", "definition_pos2_neg2", "definition_pos2"),
    SchemaPart("explanations (positive examples)", "definition_pos2_explanations", "definition_pos2"),
    SchemaPart("explanations (positive and negative)", "definition_pos2_neg2_explanations", "definition_pos2_neg2"),
    SchemaPart("every positive example, explained", "prompt_definition_pos_examples", "definition_pos2_explanations"),
    SchemaPart("definition alone (vs no instruction)", "definition", NULL),
    SchemaPart("standard header (vs no instruction)", "definition_pos2", NULL),
)


@dataclass
class NIVariant:
    """One variant of a Natural Instructions task: its scores and, from its samples, per-instance values."""

    model: str
    task: str
    category: str
    instruction: str
    file: str
    means: dict[str, float]
    n: int
    values: dict[str, dict[str, float]] = field(default_factory=dict)  # metric -> instance id -> value
    gold: dict[str, frozenset] = field(default_factory=dict)  # instance id -> its acceptable outputs, normalised
    said: dict[str, str] = field(default_factory=dict)  # instance id -> the model's answer, normalised
    budgeted: bool = False  # a budgeted sweep's variant (``--budget``): it scored its dealt share of the instances
    missing: str = ""  # why it has no per-instance values (no samples file found)


def is_ni_metadata(meta: Any) -> bool:
    """Task metadata of a Natural Instructions variant (read here, not by the nine tasks' loading)."""
    return isinstance(meta, Mapping) and meta.get("task_type") == NI_TASK_TYPE and "instructeval_task" in meta


def instruction_label(meta: Mapping[str, Any]) -> str:
    """``definition_pos2`` (a header encoding), ``null`` or the bank id (``generic-0``)."""
    if meta.get("method") == "ni_header" and meta.get("instruction_encoding"):
        return str(meta["instruction_encoding"])
    if meta.get("method") in (None, NULL) or meta.get("instruction_id") == NULL:
        return NULL
    return str(meta.get("instruction_id") or meta.get("method"))


def _instance_values(path: str) -> tuple[dict[str, dict[str, float]], dict[str, frozenset], dict[str, str]]:
    """``(metric -> instance id -> value, instance id -> acceptable outputs, instance id -> the model's
    answer)`` from one samples file (instance id: the doc's ``id``, else its ``doc_id``; answers
    normalised as the benchmark's exact match compares them, ``ni.normalize``)."""
    out: dict[str, dict[str, float]] = {m: {} for m in METRICS}
    gold: dict[str, frozenset] = {}
    said: dict[str, str] = {}
    for lineno, raw in enumerate(Path(path).read_bytes().split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            record = parse_json_line(raw)
        except BadJson as err:
            raise ValueError(f"line {lineno}: {err}") from None
        if not isinstance(record, Mapping):
            raise ValueError(f"line {lineno}: not a JSON object")
        doc = record.get("doc") if isinstance(record.get("doc"), Mapping) else {}
        key = str(doc.get("id", record.get("doc_id")))
        for metric in METRICS:
            if isinstance(record.get(metric), (int, float)):
                out[metric][key] = float(record[metric])
        outputs = doc.get("outputs")
        if isinstance(outputs, list) and outputs and all(isinstance(o, str) for o in outputs):
            gold[key] = frozenset(normalize_answer(o) for o in outputs)
        answer = _response(record)
        if answer is not None:
            said[key] = normalize_answer(answer)
    return out, gold, said


def _response(record: Mapping[str, Any]) -> str | None:
    """A generation line's answer (its filtered response)."""
    resps = record.get("filtered_resps", record.get("resps"))
    while isinstance(resps, list) and len(resps) == 1:
        resps = resps[0]
    return resps if isinstance(resps, str) else None


def _variant(name: str, meta: Mapping[str, Any], result: Mapping[str, Any], path: Path, data: Mapping[str, Any],
             issues: IssueLog, samples: bool) -> NIVariant | None:
    means = {m: result.get(f"{m},none") for m in METRICS}
    if not all(isinstance(v, (int, float)) for v in means.values()):
        issues.error("missing-metric", f"a Natural Instructions variant without {' and '.join(METRICS)}", str(path), name)
        return None
    task = str(meta["instructeval_task"]).removeprefix("instructeval_")
    model = meta.get("model_label") or label_from_pretrained(  # as the other loaders name a model
        parse_model_args((data.get("config") or {}).get("model_args")).get("pretrained") or data.get("model_name") or "model")
    variant = NIVariant(model=str(model), task=task,
                        category=str(meta.get("ni_category") or "unknown"), instruction=instruction_label(meta),
                        file=str(path), means={m: float(v) for m, v in means.items()},
                        n=int(result.get("sample_len") or meta.get("eval_size") or 0),
                        budgeted=isinstance(meta.get("budget"), Mapping))
    if samples:
        try:
            found, note = find_samples(path, name, results_stamp(path), data["results"].keys())
        except OSError:  # the exact name (variant and stamp) too long for the file system: a sweep's, named by time
            found, note = find_samples(path, name, None, data["results"].keys())
        if found:
            try:
                variant.values, variant.gold, variant.said = _instance_values(found)
            except (OSError, BadJson, ValueError) as err:  # dropped input: the command exits 3
                issues.error("bad-samples", f"samples file {found}: {err}; its per-instance scores are left out of the "
                             "verdict, the effects and the card; rerun that variant to write it again", str(path), name)
        else:
            variant.missing = note or "no samples file"
    return variant


def load_ni_results(paths: Iterable[str], issues: IssueLog, *, samples: bool = True) -> list[NIVariant]:
    """The Natural Instructions variants of the results files under ``paths`` (problems go to ``issues``)."""
    out: list[NIVariant] = []
    for path in sorted(expand_paths(paths, IssueLog()), key=lambda p: p.as_posix()):
        try:
            data = parse_json_bytes(path.read_bytes())
        except (OSError, BadJson):
            continue  # the nine tasks' loading reports it
        if not isinstance(data, Mapping) or not isinstance(data.get("results"), Mapping):
            continue
        for name in sorted(data["results"]):
            meta = ((data.get("configs") or {}).get(name) or {}).get("metadata")
            if is_ni_metadata(meta) and isinstance(data["results"][name], Mapping):
                variant = _variant(name, meta, data["results"][name], path, data, issues, samples)
                if variant is not None:
                    out.append(variant)
    _report_missing(out, issues)
    return out


def _report_missing(variants: list[NIVariant], issues: IssueLog) -> None:
    """No variant with samples: one warning (a sweep run without them). Some without, beside others that
    have theirs: each is dropped input (an error: the command exits 3), its file deleted or moved."""
    missing = [v for v in variants if v.missing]
    if not missing:
        return
    if len(missing) == len(variants):
        issues.warn("no-samples", f"none of the {len(variants)} Natural Instructions variants has a per-sample log (run "
                    "with --log_samples): no verdicts, schema-part effects or cards, only the scores")
        return
    for v in missing:
        issues.error("no-samples", f"{v.missing} for this Natural Instructions variant, while others have theirs (deleted "
                     "or moved?): its per-instance scores are left out of the verdict, the effects and the card; rerun "
                     "it to write them again", v.file, f"{v.task} {v.instruction}")


# The report's order: the tasks as the data's tasks.txt lists them; no instruction, the bank's, then the
# header encodings from the fewest parts to the whole header.
_TASK_ORDER = {ni_id(task): n for n, task in enumerate(NI_TASKS)}
_ENCODING_ORDER = {e: n for n, e in enumerate((*NI_ENCODINGS, "pos_examples", "prompt_definition_pos_examples", "full"))}


def _order(v: NIVariant) -> tuple:
    where = -1 if v.instruction == NULL else _ENCODING_ORDER.get(v.instruction, -0.5)
    return v.model, _TASK_ORDER.get(v.task, len(_TASK_ORDER)), v.task, where, v.instruction


def scores(variants: Sequence[NIVariant]) -> pd.DataFrame:
    """One row per (model, category, task, instruction): n, exact_match, rougeL (in the report's order)."""
    rows = [{"model": v.model, "category": v.category, "task": v.task, "instruction": v.instruction, "n": v.n, **v.means}
            for v in sorted(variants, key=_order)]
    return pd.DataFrame(rows, columns=["model", "category", "task", "instruction", "n", *METRICS])


def categories(table: pd.DataFrame) -> pd.DataFrame:
    """Per (model, category, instruction): the mean of the task means, and how many tasks."""
    grouped = table.groupby(["model", "category", "instruction"], sort=False)
    out = grouped[list(METRICS)].mean().reset_index()
    out.insert(3, "tasks", grouped["task"].nunique().to_numpy())
    return out


@dataclass
class Effect:
    """One schema part's effect on one (model, task or category, metric)."""

    model: str
    scope: str  # "task" or "category"
    name: str  # the task id or the category
    category: str
    part: str
    contrast: str
    metric: str
    diff: float
    replicates: np.ndarray | None
    n: int


def _task_effects(model: str, task: str, category: str, by_label: dict[str, NIVariant], *, seed: str,
                  n_boot: int) -> list[Effect]:
    """The schema-part effects of one (model, task); one resampling of its instances for all of them."""
    out: list[Effect] = []
    for part in SCHEMA_PARTS:
        a, b = by_label.get(part.with_part), by_label.get(part.without)
        if a is None or b is None:
            continue
        for metric in METRICS:
            ids = sorted(set(a.values.get(metric, {})) & set(b.values.get(metric, {})))
            if not ids:
                continue
            d = np.array([a.values[metric][i] - b.values[metric][i] for i in ids])
            reps = None
            if n_boot > 0:
                signature = hashlib.sha256("\0".join(ids).encode("utf-8")).hexdigest()[:16]
                counts = resample_counts(rng_for(seed, NI_TASK_TYPE, model, task, signature), len(ids), n_boot)
                reps = counts @ d / len(ids)
            out.append(Effect(model, "task", task, category, part.name, f"{part.with_part} - {part.without}", metric,
                              float(d.mean()), reps, len(ids)))
    return out


def effects(variants: Sequence[NIVariant], *, seed: str, n_boot: int) -> list[Effect]:
    """Every task's schema-part effects, then each category's (the mean over its tasks)."""
    grouped: dict[tuple[str, str, str], dict[str, NIVariant]] = {}
    for v in sorted(variants, key=_order):
        grouped.setdefault((v.model, v.task, v.category), {})[v.instruction] = v
    per_task = [e for (model, task, category), labels in grouped.items()
                for e in _task_effects(model, task, category, labels, seed=seed, n_boot=n_boot)]
    pooled: dict[tuple[str, str, str, str, str], list[Effect]] = {}
    for e in per_task:
        pooled.setdefault((e.model, e.category, e.part, e.contrast, e.metric), []).append(e)
    per_category = []
    for (model, category, part, contrast, metric), group in pooled.items():
        reps = None if any(e.replicates is None for e in group) else np.mean([e.replicates for e in group], axis=0)
        per_category.append(Effect(model, "category", category, category, part, contrast, metric,
                                   float(np.mean([e.diff for e in group])), reps, sum(e.n for e in group)))
    return per_task + per_category


def effects_frame(found: Sequence[Effect], level: float) -> pd.DataFrame:
    """The effects as rows, each with its percentile interval at ``level`` (NaN without replicates, and on
    fewer than ``MIN_PAIRED`` paired instances, where ``not_resolved`` says so)."""
    rows = []
    for e in found:
        low = high = detectable = math.nan
        few = e.n < MIN_PAIRED  # a bootstrap of a handful of instances prints certainty it does not have
        reps = None if few else e.replicates
        if reps is not None and len(reps):
            low, high = (float(q) for q in np.quantile(reps, [(1 - level) / 2, (1 + level) / 2]))
        if reps is not None and len(reps) > 1:
            sd = float(np.std(reps, ddof=1))
            # every replicate equal (every paired difference the same): the normal approximation has no
            # spread to work with, so no detectable size is claimed
            detectable = DETECTABLE_Z * sd if sd > 0 else math.nan
        rows.append({"model": e.model, "scope": e.scope, "name": e.name, "category": e.category, "part": e.part,
                     "contrast": e.contrast, "metric": e.metric, "diff": e.diff, "ci_low": low, "ci_high": high,
                     "detectable": detectable, "n": e.n,
                     "not_resolved": f"only {e.n} paired instances (an interval needs {MIN_PAIRED})" if few else ""})
    return pd.DataFrame(rows, columns=["model", "scope", "name", "category", "part", "contrast", "metric", "diff",
                                       "ci_low", "ci_high", "detectable", "n", "not_resolved"])


@dataclass
class NIReport:
    """The report's three frames (see the module docstring) and how the intervals were made."""

    scores: pd.DataFrame
    categories: pd.DataFrame
    effects: pd.DataFrame
    level: float
    n_boot: int
    verdicts: list = field(default_factory=list)  # ``ni_verdict``: one per (model, task)
    cards: list = field(default_factory=list)  # their sensitivity cards


def build_ni_report(variants: Sequence[NIVariant], *, seed: str, n_boot: int, level: float) -> NIReport:
    from .ni_verdict import ni_verdicts_and_cards

    table = scores(variants)
    verdicts, cards = ni_verdicts_and_cards(sorted(variants, key=_order), n_boot=n_boot, level=level, seed=seed)
    return NIReport(table, categories(table), effects_frame(effects(variants, seed=seed, n_boot=n_boot), level),
                    level, n_boot, verdicts, cards)


def _fmt(value: Any, decimals: int) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.{decimals}f}"
    return str(value)


def _markdown(frame: pd.DataFrame, decimals: int) -> list[str]:
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(_fmt(v, decimals) for v in row) + " |" for row in frame.itertuples(index=False)]
    return lines


def report_markdown(report: NIReport, decimals: int = 3) -> str:
    """``tables/natural_instructions.md``: the per-task and per-category scores, then the effects."""
    interval = (f"paired bootstrap {report.level:.0%} interval over the instances ({report.n_boot} replicates)"
                if report.n_boot else "no interval (--bootstrap 0)")
    shown = _points(report.effects, ("diff", "ci_low", "ci_high", "detectable"))
    effects_of = {scope: shown[shown["scope"] == scope].drop(columns="scope") for scope in ("task", "category")}
    decimals = max(0, decimals - 2)  # points: two places fewer than the fractions' for the same precision
    return "\n".join([
        "# Natural Instructions", "",
        "Exact match and ROUGE-L as Super-NaturalInstructions scores them, in points (the benchmark's scale; "
        "`data/ni_*.csv` keep the fractions the results files hold).", "", "## Per task", "",
        *_markdown(_points(report.scores, METRICS), decimals), "",
        "## Per category (mean over the category's tasks)", "", *_markdown(_points(report.categories, METRICS), decimals), "",
        f"## Schema-part effects per task (A - B, {interval})", "",
        f"`detectable`: the effect the paired comparison finds with {POWER:.0%} power at the {ALPHA:.0%} level, "
        f"{DETECTABLE_Z:.2f} x the replicates' SD; an interval covering 0 rules out only effects above it.", "",
        *_markdown(effects_of["task"], decimals), "",
        "## Schema-part effects per category (mean of the tasks' effects)", "",
        *_markdown(effects_of["category"], decimals), ""])


def write_ni_report(report: NIReport, out: str | Path, decimals: int = 3) -> list[str]:
    """Write ``tables/natural_instructions.md`` and ``data/ni_{scores,categories,effects}.csv``; their paths."""
    out = Path(out)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "data").mkdir(parents=True, exist_ok=True)
    paths = [out / "tables" / "natural_instructions.md"]
    paths[0].write_text(report_markdown(report, decimals), encoding="utf-8")
    for name, frame in (("scores", report.scores), ("categories", report.categories), ("effects", report.effects)):
        paths.append(out / "data" / f"ni_{name}.csv")
        frame.to_csv(paths[-1], index=False)
    return [str(p) for p in paths]


def summary_lines(report: NIReport) -> list[str]:
    """The terminal's lines: per (model, category), ROUGE-L under the standard encoding and the largest effect."""
    lines = []
    standard = report.categories[report.categories["instruction"] == "definition_pos2"]
    effects_ = report.effects[(report.effects["scope"] == "category") & (report.effects["metric"] == "rougeL")]
    for row in standard.itertuples(index=False):
        line = f"ni {row.model} | {row.category}: ROUGE-L {100 * row.rougeL:.1f} points (definition_pos2)"
        mine = effects_[(effects_["model"] == row.model) & (effects_["name"] == row.category)]
        resolved = mine[mine["n"] >= MIN_PAIRED]
        if not mine.empty and resolved.empty:
            line += (f"; no schema-part effect resolved (at most {int(mine['n'].max())} paired instances; an effect "
                     f"needs {MIN_PAIRED})")
        elif not resolved.empty and not resolved["diff"].abs().gt(0).any():
            line += "; no schema part changes it on these instances (every effect 0)"
        elif not resolved.empty:
            top = resolved.loc[resolved["diff"].abs().idxmax()]
            ci = "" if math.isnan(top["ci_low"]) else f" [{100 * top['ci_low']:+.1f}, {100 * top['ci_high']:+.1f}]"
            line += (f"; largest schema-part effect: {top['part']} {100 * top['diff']:+.1f}{ci} points "
                     f"(n = {int(top['n'])} paired instances)")
        lines.append(line)
    return lines


def _points(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    out = frame.copy()
    for column in columns:
        out[column] = 100.0 * out[column]
    return out


def ni_html(report: NIReport, frame_html: Any) -> str:
    """The report's "Natural Instructions" section: ROUGE-L per category under the standard encoding,
    the schema parts' effects per category with their intervals, the cards, the per-task scores folded."""
    import html

    from .sensitivity_report import cards_html

    parts = ["<h2>Natural Instructions</h2>",
             "<p class='note'>Scored as Super-NaturalInstructions scores them (exact match and ROUGE-L, the maximum over "
             "an instance's references), in points (the benchmark's scale). The verdicts above read ROUGE-L; the "
             "standard encoding is the benchmark's (<code>definition_pos2</code>: Definition + 2 positive examples).</p>"]
    standard = report.categories[report.categories["instruction"] == "definition_pos2"]
    if not standard.empty:
        wide = standard.pivot_table(index="category", columns="model", values="rougeL", aggfunc="first") * 100.0
        wide.columns = [f"ROUGE-L {model}" for model in wide.columns]
        parts += ["<h3>ROUGE-L per category, standard encoding</h3>", frame_html(wide.reset_index(), decimals=1)]
    effects_ = report.effects[(report.effects["scope"] == "category") & (report.effects["metric"] == "rougeL")]
    if not effects_.empty:
        shown = _points(effects_[["model", "category", "part", "contrast", "diff", "ci_low", "ci_high", "detectable", "n"]],
                        ("diff", "ci_low", "ci_high", "detectable"))
        interval = (f"{report.level:.0%} paired bootstrap interval over the instances" if report.n_boot
                    else "no interval (--bootstrap 0)")
        parts += ["<h3>What each part of the instruction does (ROUGE-L, points)</h3>",
                  f"<p class='note'>Encoding A minus encoding B on the same instances, per category (the mean of its "
                  f"tasks' effects); {html.escape(interval)}; detectable: the effect found with {POWER:.0%} power at "
                  f"the {ALPHA:.0%} level (an interval covering 0 rules out only effects above it). Per task in "
                  f"tables/natural_instructions.md.</p>",
                  frame_html(shown.reset_index(drop=True), decimals=1)]
    if report.cards:
        parts.append(cards_html(report.cards, frame_html, title="Sensitivity cards (ROUGE-L)", heading="h3",
                                where="sensitivity/ni_card.json"))
    scores_ = _points(report.scores, METRICS)
    parts += ["<details><summary>Every (model, task, instruction)</summary>",
              frame_html(scores_.reset_index(drop=True), decimals=1), "</details>"]
    return "\n".join(parts)
