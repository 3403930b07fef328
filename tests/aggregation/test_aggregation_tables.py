"""Wins (with ties), task-type averages, variation range, table rendering, breakdowns."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from instructeval_aggregation import aggregate, load_runs
from instructeval_aggregation.summaries import range_table, type_averages, wins_table
from instructeval_aggregation.tables import Table, best_rows, to_csv, to_latex, to_markdown
from instructeval_aggregation.testing import SyntheticVariant, write_run

NAN = float("nan")


def gain_table():
    frame = pd.DataFrame(
        {"agnews": [1.0, 1.0 + 1e-12, 0.5], "boolq": [0.0, -1.0, 2.0], "triviaqa": [3.0, 1.0, NAN]},
        index=["null", "generic", "rlprompt"],
    )
    return Table("gain_zero_shot", "ZS", frame, best="max")


def sens_table():
    frame = pd.DataFrame({"agnews": [0.3, 0.1, 0.1], "boolq": [NAN, NAN, NAN]}, index=["null", "generic", "rlprompt"])
    return Table("sensitivity_selectional", "Sel", frame, best="min")


def test_wins_with_ties():
    """AG News: null 1.0 and generic 1.0+1e-12 tie (within 1e-9): both win. BoolQ: rlprompt.
    TriviaQA: null (rlprompt NaN never wins). Sensitivity AG News: generic and rlprompt tie at 0.1
    (lowest); BoolQ all NaN: no winner. Totals: null 2, generic 2, rlprompt 2."""
    table, detail = wins_table([gain_table(), sens_table()], 1e-9)
    wins = table.frame
    assert wins.loc["null", "gain_zero_shot"] == 2
    assert wins.loc["generic", "gain_zero_shot"] == 1
    assert wins.loc["rlprompt", "gain_zero_shot"] == 1
    assert wins.loc["generic", "sensitivity_selectional"] == 1 and wins.loc["rlprompt", "sensitivity_selectional"] == 1
    assert wins.loc["null", "sensitivity_selectional"] == 0
    assert list(wins["total"]) == [2, 2, 2]
    shared = detail[(detail["table"] == "gain_zero_shot") & (detail["task"] == "agnews")].iloc[0]
    assert shared["winners"] == "null;generic" and bool(shared["shared"])
    assert "boolq" not in set(detail[detail["table"] == "sensitivity_selectional"]["task"])


def test_best_marks_and_renderings():
    table = gain_table()
    md = to_markdown(table)
    assert "| Null | **1.000** | 0.000 | **3.000** |" in md
    assert "| Generic | **1.000** | -1.000 | 1.000 |" in md
    assert "| RLPrompt | 0.500 | **2.000** | – |" in md
    csv = to_csv(table)
    assert csv.splitlines()[0] == "method,agnews,boolq,triviaqa"
    assert csv.splitlines()[-1] == "_best,null;generic,rlprompt,null"
    assert "rlprompt,0.500000,2.000000," in csv
    tex = to_latex(table)
    assert "Null & \\textbf{1.000} & 0.000 & \\textbf{3.000} \\\\" in tex
    assert "Generic & \\textbf{1.000} & $-$1.000 & 1.000 \\\\" in tex
    assert "RLPrompt & 0.500 & \\textbf{2.000} & -- \\\\" in tex


def test_best_rows_ignores_nan_and_handles_min():
    s = pd.Series([NAN, 2.0, 1.0], index=["a", "b", "c"])
    assert best_rows(s, "max") == ["b"] and best_rows(s, "min") == ["c"]
    assert best_rows(pd.Series([NAN], index=["a"]), "max") == []


def test_type_averages_are_unweighted_and_never_partial():
    """CLS = mean(agnews, boolq); GQA = triviaqa; a row lacking one CLS column gets no CLS average."""
    frame = pd.DataFrame({"agnews": [1.0, 4.0], "boolq": [3.0, NAN], "triviaqa": [5.0, 6.0]}, index=["null", "ape"])
    avg = type_averages(frame)
    assert list(avg.columns) == ["cls", "gqa"]
    assert avg.loc["null", "cls"] == 2.0 and math.isnan(avg.loc["ape", "cls"])
    assert avg.loc["ape", "gqa"] == 6.0


def test_variation_range():
    rng = range_table([gain_table()], 3).frame
    assert rng.loc["gain_zero_shot", "agnews"] == pytest.approx(0.5 + 1e-12)
    assert rng.loc["gain_zero_shot", "triviaqa"] == 2.0  # NaN methods left out


def test_paper_orders_and_breakdowns(tmp_path):
    """Rows in the paper's method order, columns in its task order; family and scale splits use the
    registry (opt-6.7b is OPT and >= 6B; SmolLM2-135M is SmolLM-family, not LLaMA, and < 6B)."""
    methods = ["rlprompt", "ape", "low_perplexity", "adhoc", "promptsource", "generic", "null", "custom"]
    tasks = ["nq_open", "triviaqa", "cosmosqa", "hellaswag", "emotion", "imdb", "boolq", "anli", "agnews"]
    for model, bump in (("opt-6.7b", 0.0), ("SmolLM2-135M", 0.05)):
        variants = [
            SyntheticVariant(t, m, f"{m}-0", "zero_shot", value=0.3 + 0.02 * i + bump * (j % 2))
            for i, m in enumerate(methods)
            for j, t in enumerate(tasks)
            if not (m == "rlprompt" and t in ("nq_open", "triviaqa"))
        ]
        write_run(tmp_path, model, variants, samples=False)
    result = aggregate(load_runs([tmp_path]), n_boot=0)
    table = result.table("gain_zero_shot")
    assert list(table.index) == ["null", "generic", "promptsource", "adhoc", "low_perplexity", "ape", "rlprompt", "custom"]
    assert list(table.columns) == ["agnews", "anli", "boolq", "imdb", "emotion", "hellaswag", "cosmosqa", "triviaqa", "nq_open"]
    assert math.isnan(table.loc["rlprompt", "nq_open"])
    md = to_markdown(result.tables["gain_zero_shot"])
    assert md.splitlines()[2] == "| Method | AG News | ANLI | BoolQ | IMDB | Emotion | HellaSwag | CosmosQA | TriviaQA | NQ-Open |"
    models = result.models.set_index("model")
    assert models.loc["opt-6.7b", "family"] == "OPT" and models.loc["opt-6.7b", "scale"] == ">=6B"
    assert models.loc["SmolLM2-135M", "family"] == "SmolLM" and models.loc["SmolLM2-135M", "scale"] == "<6B"
    scale = result.table("scale_gain_zero_shot")
    assert set(scale.index.get_level_values(0)) == {"<6B", ">=6B"}
    assert list(scale.index.get_level_values(0))[0] == "<6B"
    assert {"cls", "mcq", "gqa"} <= set(scale.columns)
    family = result.table("family_gain_zero_shot")
    # With one model per family, the family cell equals that model's gain.
    small = result.gains[(result.gains["model"] == "SmolLM2-135M") & (result.gains["metric"] == "zero_shot")]
    expected = small.set_index(["method", "task"])["gain"][("ape", "agnews")]
    assert family.loc[("SmolLM", "ape"), "agnews"] == pytest.approx(expected)
    # Two models per cell in the main table: the mean of the two families' cells.
    assert table.loc["ape", "agnews"] == pytest.approx(
        (family.loc[("SmolLM", "ape"), "agnews"] + family.loc[("OPT", "ape"), "agnews"]) / 2
    )
