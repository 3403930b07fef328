"""Where the sensitivity cards go: the report folder, the HTML, the terminal and (on request) beside the results.

Files (in the report folder):

- ``sensitivity/card.json``: every card of the run, valid against ``sensitivity_card.schema.json``
  (shipped with the package, and copied beside it);
- ``sensitivity/instructeval_sensitivity_<model>.json``: one results-shaped file per model
  (``results`` + the ``instructeval_sensitivity`` block keyed by harness task), for leaderboards
  that store lm-eval results;
- ``data/sensitivity_cards.csv``: the cards in long form (model, task, placement, setting, measure, value,
  ci_low, ci_high, unit).

``instructeval aggregate --write-back`` also writes each model's results-shaped file into the folder
of that model's results files, under a lock, replacing it atomically.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pandas as pd

from .csv_cells import safe_frame
from .sensitivity_card import (
    MEASURES,
    SETTING_MEASURES,
    SensitivityCard,
    card_document,
    results_document,
)

SCHEMA_FILE = Path(__file__).with_name("sensitivity_card.schema.json")
RESULTS_FILE_PATTERN = "instructeval_sensitivity_{model}.json"


def _options(aggregates) -> dict[str, Any]:
    opts = aggregates.options
    return {"seed": opts.seed, "bootstrap": opts.n_boot, "ci_level": opts.ci_level, "ddof": opts.ddof,
            "metric": opts.metric, "gqa_metric": opts.gqa_metric}


def harness_names(aggregates) -> Callable[[str], str]:
    """``task -> harness task name`` (the part of the variants' names before ``__``, e.g. ``instructeval_agnews``)."""
    names: dict[str, str] = {}
    frame = aggregates.variants
    if frame is not None and not frame.empty:
        for task, variant in zip(frame["task"], frame["variant"]):
            names.setdefault(task, str(variant).split("__")[0])
    return lambda task: names.get(task, f"instructeval_{task}")


def safe_model_name(model: str) -> str:
    """A file-name-safe form of a model label (``org/name`` -> ``org__name``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model.replace("/", "__")) or "model"


def long_frame(cards: Sequence[SensitivityCard]) -> pd.DataFrame:
    rows = []
    for card in cards:
        for name in SETTING_MEASURES[card.setting]:
            m = card.measures.get(name)
            if m is None:
                continue
            d = m.as_dict()
            rows.append({"model": card.model, "task": card.task, "placement": card.placement or "", "setting": card.setting,
                         "measure": name,
                         "value": d["value"], "ci_low": d["ci_low"], "ci_high": d["ci_high"],
                         "unit": MEASURES[name].unit, "n_instructions": len(card.instructions), "n_items": card.n_items,
                         "why": d.get("why", "")})
    return pd.DataFrame(rows, columns=["model", "task", "placement", "setting", "measure", "value", "ci_low", "ci_high", "unit",
                                       "n_instructions", "n_items", "why"])


def write_ni_card_files(aggregates, folder: Path, data_dir: Path) -> list[Path]:
    """The Natural Instructions tasks' cards: ``ni_card.json`` (the card document) and ``data/ni_sensitivity_cards.csv``."""
    cards = aggregates.ni.cards
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ni_card.json"
    path.write_text(json.dumps(card_document(cards, options=_options(aggregates)), indent=2, allow_nan=False) + "\n",
                    encoding="utf-8")
    text = safe_frame(long_frame(cards)).to_csv(index=False, float_format="%.6f", lineterminator="\n")
    (data_dir / "ni_sensitivity_cards.csv").write_text(text, encoding="utf-8", newline="\n")
    return [path]


def write_card_files(aggregates, folder: Path, data_dir: Path) -> list[Path]:
    """Write ``card.json``, the schema and one results-shaped file per model into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    options = _options(aggregates)
    written = [folder / "card.json", folder / SCHEMA_FILE.name]
    written[0].write_text(json.dumps(card_document(aggregates.cards, options=options), indent=2, allow_nan=False) + "\n",
                          encoding="utf-8")
    shutil.copyfile(SCHEMA_FILE, written[1])
    names = harness_names(aggregates)
    for model in sorted({c.model for c in aggregates.cards}):
        path = folder / RESULTS_FILE_PATTERN.format(model=safe_model_name(model))
        doc = results_document(model, aggregates.cards, harness_name=names, options=options)
        path.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        written.append(path)
    text = safe_frame(long_frame(aggregates.cards)).to_csv(index=False, float_format="%.6f", lineterminator="\n")
    (data_dir / "sensitivity_cards.csv").write_text(text, encoding="utf-8", newline="\n")
    return written


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl

    with open(path.with_name(path.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_back(aggregates) -> tuple[list[str], list[str]]:
    """Write each model's results-shaped card beside its results files; ``(written, problems)``.

    A model whose results files lie in several folders gets the file in each. A folder that
    cannot be written is a problem (reported, nothing else changes); the report is already complete.
    """
    options = _options(aggregates)
    names = harness_names(aggregates)
    folders: dict[str, set[Path]] = {}
    for run in aggregates.runs:
        folders.setdefault(run.model, set()).add(Path(run.file).resolve().parent)
    written: list[str] = []
    problems: list[str] = []
    for model in sorted({c.model for c in aggregates.cards}):
        doc = json.dumps(results_document(model, aggregates.cards, harness_name=names, options=options), indent=2,
                         allow_nan=False) + "\n"
        for folder in sorted(folders.get(model, ())):
            path = folder / RESULTS_FILE_PATTERN.format(model=safe_model_name(model))
            try:
                with _locked(path):
                    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
                    try:
                        with os.fdopen(fd, "w", encoding="utf-8") as handle:
                            handle.write(doc)
                        os.replace(tmp, path)
                    except BaseException:
                        with contextlib.suppress(OSError):
                            os.unlink(tmp)
                        raise
                written.append(str(path))
            except OSError as err:
                problems.append(f"--write-back: cannot write {path} ({err.strerror or err}); the report is complete")
    return written, problems


def cards_html(cards: Sequence[SensitivityCard], frame_html: Callable[..., str], *, title: str = "Sensitivity cards",
               heading: str = "h2", where: str = "sensitivity/card.json") -> str:
    """The report's "Sensitivity cards" section: one table per setting, a legend of the measures."""
    level = next((c.bootstrap.get("level") for c in cards if c.bootstrap.get("replicates")), None)
    interval = (f"under each value, its {level:.0%} interval from a bootstrap over both instructions and items"
                if level else "no intervals (--bootstrap 0)")
    parts = [f"<{heading}>{html.escape(title)}</{heading}>",
             f"<p class='note'>Every prompt-sensitivity measure per (model, task, setting); {interval} "
             f"({html.escape(where)} has them all, with the reason for each n/a). Points unless noted: "
             "PSS is a fraction of instruction pairs, POSIX in nats.</p>"]
    shown = ("avgp", "minp", "maxp", "spread", "instruction_sd", "item_noise_sd", "cps", "q05", "q50", "q95", "pss",
             "posix", "selectional", "permutational", "worst_case")
    for setting in ("zero_shot", "few_shot", "perturbed"):
        part = [c for c in cards if c.setting == setting]
        if not part:
            continue
        names = [n for n in shown if n in SETTING_MEASURES[setting]]
        placed = any(c.placement for c in part)
        head = "".join(f"<th>{html.escape(h)}</th>" for h in ("model", "task", *(("placement",) if placed else ()),
                                                               "instructions", "items"))
        head += "".join(f"<th title='{html.escape(MEASURES[n].formula)}'>{html.escape(MEASURES[n].title)}</th>" for n in names)
        rows = []
        for card in part:
            cells = [f"<td class='l'>{html.escape(card.model)}</td>", f"<td class='l'>{html.escape(card.task)}</td>"]
            if placed:
                cells.append(f"<td class='l'>{html.escape(card.placement or 'InstructEval')}</td>")
            cells += [f"<td>{len(card.instructions)}</td>", f"<td>{card.n_items if card.n_items is not None else ''}</td>"]
            cells += [_cell_html(name, card.measures.get(name)) for name in names]
            rows.append("<tr>" + "".join(cells) + "</tr>")
        parts.append(f"<h3>{html.escape(setting.replace('_', '-'))}</h3>")
        parts.append(f"<div class='wide'><table class='t card'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}"
                     "</tbody></table></div>")
    legend = pd.DataFrame([{"measure": m.title, "unit": m.unit, "formula": m.formula, "source": m.source} for m in MEASURES.values()])
    parts.append("<h3>Measures</h3>")
    parts.append(frame_html(legend))
    return "\n".join(parts)


def _digits(name: str) -> int:
    return 1 if MEASURES[name].unit == "points" else 3


def _cell_html(name: str, m) -> str:
    if m is None:
        return "<td></td>"
    d = m.as_dict()
    if d["value"] is None:
        return f"<td title='{html.escape(d.get('why', ''))}'>n/a</td>"
    k = _digits(name)
    text = f"{d['value']:.{k}f}"
    if d["ci_low"] is not None and d["ci_high"] is not None:
        text += f"<br><small>{d['ci_low']:.{k}f}&ndash;{d['ci_high']:.{k}f}</small>"
    return f"<td>{text}</td>"


def summary_lines(cards: Sequence[SensitivityCard]) -> list[str]:
    """One terminal line per (model, task, setting) card, zero- and few-shot, with the worst perturbed accuracy."""
    worst = {(c.model, c.task): c.measures.get("worst_case") for c in cards if c.setting == "perturbed"}
    lines = []
    for card in cards:
        if card.setting == "perturbed":
            continue
        line = card.summary_line()
        w = worst.get((card.model, card.task))
        if w is not None and w.value is not None:
            line += f"; worst perturbed {w.value:.1f}"
        lines.append(line)
    return lines
