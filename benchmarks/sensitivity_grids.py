"""Sensitivity cards of the shipped full grids, and which measures rank the grids' sensitivity alike.

Reads a per-item grid cache (default ``benchmarks/data/budget_grid_smollm2.json``: SmolLM2-135M,
AG News and HellaSwag, zero-shot and one few-shot demo set, every instruction of null, generic,
PromptSource and ad hoc on the paper's 100 items) and prints, per grid, the card's measures with
their two-way bootstrap intervals, then the rank of each grid under each sensitivity measure.

    python benchmarks/sensitivity_grids.py [--cache FILE] [--bootstrap 1000] [--seed instructeval]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from instructeval_aggregation.sensitivity_card import build_card

DEFAULT_CACHE = Path(__file__).with_name("data") / "budget_grid_smollm2.json"
SHOWN = ("avgp", "minp", "maxp", "spread", "cps", "q05", "q50", "q95", "pss", "instruction_sd", "item_noise_sd")
# Measures that grow with sensitivity (CPS falls with it, so it ranks by its negative).
SENSITIVITY = {"spread": 1, "iqr_90": 1, "maxp_minus_avgp": 1, "pss": 1, "instruction_sd": 1, "cps_loss": 1}


def _cards(cache: dict, n_boot: int, seed: str) -> dict:
    cards = {}
    for key, grid in sorted(cache["grids"].items()):
        rows = grid["rows"]
        keys = [(r["method"], r["instruction"]) for r in rows]
        Y = np.array([[int(c) for c in r["correct"]] for r in rows], dtype=float)
        cards[key] = build_card(cache.get("model", ["model"])[0], grid["task"], grid["setting"], keys, Y, None,
                                n_boot=n_boot, level=0.95, seed=seed)
    return cards


def _derived(card) -> dict[str, float]:
    m = {k: v.value for k, v in card.measures.items()}
    return {"spread": m["spread"], "iqr_90": m["q95"] - m["q05"], "maxp_minus_avgp": m["maxp"] - m["avgp"],
            "pss": m["pss"], "instruction_sd": m["instruction_sd"], "cps_loss": m["maxp"] - m["cps"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--seed", default="instructeval")
    args = parser.parse_args(argv)
    cache = json.loads(args.cache.read_text())
    cards = _cards(cache, args.bootstrap, args.seed)
    print(f"cache: {args.cache} ({cache.get('model')}, metric {cache.get('metric')}); "
          f"{args.bootstrap} two-way bootstrap replicates, seed {args.seed!r}\n")
    print("| grid | instr. | items | " + " | ".join(SHOWN) + " |")
    print("|---|---|---|" + "---|" * len(SHOWN))
    for key, card in cards.items():
        cells = []
        for name in SHOWN:
            m = card.measures[name]
            digits = 3 if name == "pss" else 1
            cells.append(f"{m.value:.{digits}f} [{m.ci_low:.{digits}f}, {m.ci_high:.{digits}f}]")
        print(f"| {key} | {len(card.instructions)} | {card.n_items} | " + " | ".join(cells) + " |")
    print("\nrank of each grid's sensitivity (1 = most sensitive):\n")
    derived = {key: _derived(card) for key, card in cards.items()}
    keys = list(cards)
    print("| measure | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    for name in SENSITIVITY:
        values = np.array([derived[k][name] for k in keys])
        ranks = (-values).argsort().argsort() + 1
        print(f"| {name} | " + " | ".join(f"{r} ({v:.3f})" if name == "pss" else f"{r} ({v:.1f})" for r, v in zip(ranks, values)) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
