"""``--budget``: the cell sampler's guarantees, and budgeted sweeps through the harness."""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from instructeval_tasks.sweep import run_sweep
from instructeval_tasks.sweep.budget import Budget, BudgetError, assign_cells, balanced_quotas
from instructeval_tasks.sweep.store import SweepStoreError

NAMES = [f"instr-{k}" for k in range(51)]
AGNEWS_LABELS = [j % 4 for j in range(100)]  # a balanced 100-item sample of 4 classes


@pytest.mark.parametrize("fraction, min_items, expected", [(0.1, 10, 10), (0.25, 10, 25), (0.05, 10, 10), (0.05, 3, 5)])
def test_every_instruction_gets_its_quota(fraction, min_items, expected):
    cells = assign_cells(NAMES, AGNEWS_LABELS, Budget(fraction, min_items=min_items), "agnews:zs")
    assert {len(items) for items in cells.values()} == {expected}
    assert all(items == sorted(set(items)) for items in cells.values())


def test_quota_covers_every_item_when_instructions_are_few():
    # 3 instructions x ceil(0.1 * 100) = 30 cells cannot cover 100 items: the quota rises to ceil(100 / 3).
    cells = assign_cells(["a", "b", "c"], AGNEWS_LABELS, Budget(0.1), "agnews:zs")
    assert {len(items) for items in cells.values()} == {34}
    assert set().union(*cells.values()) == set(range(100))


@pytest.mark.parametrize("fraction", [0.05, 0.1, 0.25])
def test_every_item_is_covered_and_used_evenly(fraction):
    cells = assign_cells(NAMES, AGNEWS_LABELS, Budget(fraction), "agnews:fs-d0")
    uses = collections.Counter(j for items in cells.values() for j in items)
    assert set(uses) == set(range(100))
    assert max(uses.values()) - min(uses.values()) <= 1  # dealt from per-class queues


def test_classes_are_balanced_within_each_instruction():
    cells = assign_cells(NAMES, AGNEWS_LABELS, Budget(0.1), "agnews:zs")
    extras = collections.Counter()
    for items in cells.values():
        counts = collections.Counter(AGNEWS_LABELS[j] for j in items)
        assert sorted(counts.values()) == [2, 2, 3, 3]  # balanced_counts(10, 4)
        extras.update(c for c, k in counts.items() if k == 3)
    assert set(extras) == {0, 1, 2, 3}  # the extra items rotate over the classes


def test_balance_follows_uneven_classes_as_far_as_they_go():
    labels = [0] * 90 + [1] * 10  # a multiple-choice sample whose gold answers are uneven
    cells = assign_cells(["a", "b", "c", "d"], labels, Budget(0.3, min_items=5), "hellaswag:zs")
    for items in cells.values():
        counts = collections.Counter(labels[j] for j in items)
        assert len(items) >= 30 and counts[1] == 10  # the small class gives all it has, the large one the rest
    assert set().union(*cells.values()) == set(range(100))
    # 4 x 20 draws leave 10 of the 90 class-0 items uncovered: each joins the smallest instruction.
    assert sorted(len(items) for items in cells.values()) == [32, 32, 33, 33]


def test_full_instructions_get_every_item_and_leave_the_quota_to_the_others():
    cells = assign_cells(["null", *NAMES[:20]], AGNEWS_LABELS, Budget(0.1), "agnews:zs", full=["null"])
    assert cells["null"] == list(range(100))
    assert {len(cells[name]) for name in NAMES[:20]} == {10}  # ceil(100 / 20) = 5 < 10
    uses = collections.Counter(j for name in NAMES[:20] for j in cells[name])
    assert max(uses.values()) - min(uses.values()) <= 1


def test_draws_are_seeded_per_grid_and_reproducible():
    budget = Budget(0.1)
    first = assign_cells(NAMES, AGNEWS_LABELS, budget, "agnews:zs")
    assert assign_cells(NAMES, AGNEWS_LABELS, budget, "agnews:zs") == first
    assert assign_cells(NAMES, AGNEWS_LABELS, budget, "agnews:fs-d0") != first
    assert assign_cells(NAMES, AGNEWS_LABELS, Budget(0.1, seed=1), "agnews:zs") != first


# the benchmark grids' methods beside null: 5 generic, 5 PromptSource, 40 ad hoc instructions
METHODS = ["generic"] * 5 + ["promptsource"] * 5 + ["adhoc"] * 40


def test_the_balanced_design_shares_the_uniform_cells_by_the_square_root_of_method_sizes():
    quotas = balanced_quotas(METHODS, 100, Budget(0.1, design="balanced"))
    totals = collections.Counter()
    for method, q in zip(METHODS, quotas):
        totals[method] += q
    assert sum(quotas) == 50 * 10  # the uniform design's cells at 10%
    # sqrt(5) : sqrt(5) : sqrt(40) of 500 = 103.6 : 103.6 : 292.9, i.e. 20.7, 20.7 and 7.3 items per
    # instruction; whole items, the remainders largest first: 21 x 10, then 8 x 10 and 7 x 30 of ad hoc
    assert totals == {"generic": 105, "promptsource": 105, "adhoc": 290}
    assert set(quotas[:10]) == {21} and sorted(quotas[10:]) == [7] * 30 + [8] * 10
    # one method: every instruction gets the uniform quota
    assert set(balanced_quotas(["adhoc"] * 50, 100, Budget(0.1, design="balanced"))) == {10}


def test_balanced_quotas_stay_within_the_minimum_and_the_items():
    # 5%: ad hoc would get 3.66 items each, below --budget-min-items 4; it keeps 4, the others share the rest
    quotas = balanced_quotas(METHODS, 100, Budget(0.05, min_items=4, design="balanced"))
    assert sum(quotas) == 250 and set(quotas[10:]) == {4} and set(quotas[:10]) == {9}
    # the default minimum (5) at 5% leaves nothing to move: every instruction gets 5, as the uniform design gives
    assert set(balanced_quotas(METHODS, 100, Budget(0.05, design="balanced"))) == {5}
    # a one-instruction method would get 336 of 100 items: it gets all 100, the 40 others the rest
    quotas = balanced_quotas(["solo"] + ["adhoc"] * 40, 100, Budget(0.6, design="balanced"))
    assert quotas[0] == 100 and set(quotas[1:]) == {59} and sum(quotas) == 41 * 60


def test_balanced_cells_keep_the_sampler_guarantees():
    names = [f"{method}-{k}" for k, method in enumerate(METHODS)]
    budget = Budget(0.1, design="balanced")
    cells = assign_cells(["null", *names], AGNEWS_LABELS, budget, "agnews:zs", full=["null"], methods=["null", *METHODS])
    assert cells["null"] == list(range(100))
    assert [len(cells[name]) for name in names] == balanced_quotas(METHODS, 100, budget)
    assert set().union(*(set(cells[name]) for name in names)) == set(range(100))
    for name in names:  # classes balanced within each instruction
        counts = collections.Counter(AGNEWS_LABELS[j] for j in cells[name])
        assert max(counts.values()) - min(counts.values()) <= 1
    assert assign_cells(["null", *names], AGNEWS_LABELS, budget, "agnews:zs", full=["null"],
                        methods=["null", *METHODS]) == cells
    # without methods, or with one, the balanced design deals the uniform design's cells
    uniform = assign_cells(names, AGNEWS_LABELS, Budget(0.1, min_items=10, design="uniform"), "agnews:zs")
    assert assign_cells(names, AGNEWS_LABELS, Budget(0.1, min_items=10, design="balanced"), "agnews:zs") == uniform
    assert assign_cells(names, AGNEWS_LABELS, Budget(0.1, min_items=10, design="balanced"), "agnews:zs",
                        methods=["adhoc"] * 50) == uniform


def test_the_default_design_is_uniform_and_the_balanced_one_has_its_own_minimum():
    assert Budget(0.1).design == "uniform" and Budget(0.1).min_items == 10
    assert Budget(0.1, design="adaptive").min_items == 10 and Budget(0.1, design="balanced").min_items == 5
    assert "design" not in Budget(0.1).as_dict()  # a uniform record is as it was before designs existed
    assert Budget(0.1).defaulted == {"design", "min_items"} and Budget(0.1, design="uniform").defaulted == {"min_items"}
    assert Budget(0.1) == Budget(0.1, design="uniform", min_items=10)  # what was left out is no part of the budget
    assert "design" not in Budget(0.1, design="uniform").as_dict()  # uniform records are as they were


@pytest.mark.parametrize("kwargs, message", [
    ({"fraction": 0}, r"--budget 0: expected a share"),
    ({"fraction": 1.5}, r"--budget 1.5"),
    ({"fraction": 0.1, "seed": -1}, r"--budget-seed"),
    ({"fraction": 0.1, "min_items": 0}, r"--budget-min-items"),
])
def test_bad_budgets_are_user_errors(kwargs, message):
    with pytest.raises(BudgetError, match=message):
        Budget(**kwargs)


def _variants(root: Path) -> dict[str, dict]:
    found = {}
    for path in sorted(root.rglob("results_*.json")):
        data = json.loads(path.read_text())
        for name, result in data["results"].items():
            found[name] = {"meta": data["configs"][name]["metadata"], "result": result, "n": data["n-samples"][name]}
    return found


def _sweep(out: Path, model_dir: Path, data_dir: Path, budget, **kwargs):
    return run_sweep(
        model="hf", model_args=f"pretrained={model_dir},dtype=float32", tasks="agnews,hellaswag", methods="null,generic",
        output=out, profile="quick", data_dir=str(data_dir), progress=False, budget=budget,
        overrides={"instructions_per_method": 5, "test_sample": 8, "settings": ["zero_shot", "few_shot"], "n_selections": 1},
        **kwargs,
    )


@pytest.fixture(scope="module")
def budgeted_sweep(tmp_path_factory, tiny_model_dir, tiny_data_dir):
    out = tmp_path_factory.mktemp("budget")
    report = _sweep(out, tiny_model_dir, tiny_data_dir, Budget(0.25, min_items=2, design="balanced"))
    return out, report


def test_budgeted_variants_evaluate_exactly_their_cells(budgeted_sweep):
    out, report = budgeted_sweep
    variants = _variants(out)
    assert report.evaluated == len(variants) == 24
    grids = collections.defaultdict(list)
    for name, v in variants.items():
        budget = v["meta"]["budget"]
        assert budget["fraction"] == 0.25 and budget["seed"] == 0 and budget["n_items"] == 8
        assert budget["design"] == "balanced"
        assert v["n"] == {"original": 8, "effective": len(budget["items"])}
        grids[budget["grid"]].append(budget["items"])
        samples = list(out.rglob(f"samples_{name}_*.jsonl"))
        assert len(samples) == 1
        doc_ids = [json.loads(line)["doc_id"] for line in samples[0].read_text().splitlines()]
        assert doc_ids == budget["items"]  # the logged doc_id is the item's position in the test sample
        if v["meta"]["method"] == "null":  # the baseline of relative gain gets every item
            assert budget["items"] == list(range(8))
        else:
            assert len(budget["items"]) == 2
    assert sorted(grids) == ["agnews:fs-d0", "agnews:zs", "hellaswag:fs-d0", "hellaswag:zs"]
    for items in grids.values():
        assert set().union(*map(set, items)) == set(range(8))
    # per grid: null 8 cells + 5 generic instructions x max(ceil(0.25 * 8), 2, ceil(8 / 5)) = 2
    assert report.plan["budget"]["cells"] == 4 * 18 and report.plan["budget"]["grid_size"] == 192


def test_progress_lines_say_a_budgeted_score_is_on_its_cells(tmp_path, tiny_model_dir, tiny_data_dir, capsys):
    run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews", methods="null,generic",
              output=tmp_path, profile="quick", data_dir=str(tiny_data_dir), progress=True,
              budget=Budget(0.25, min_items=2, design="balanced"),
              overrides={"instructions_per_method": 2, "test_sample": 8, "settings": ["zero_shot"]})
    err = capsys.readouterr().err
    # null gets all 8 items; each generic instruction max(ceil(0.25 * 8), 2, ceil(8 / 2)) = 4
    assert ("budget 0.25 (seed 0, balanced design): 16 of 24 (instruction, item) cells (66.7%) in 1 (task, setting) "
            "grid(s); every instruction >= 4 items, every item >= 1 instruction; null on every item") in err
    assert re.search(r"done instructeval_agnews__null__zs: acc_per_token=\d\.\d{3} \(", err)
    assert len(re.findall(r"done instructeval_agnews__generic-\d__zs: acc_per_token=\d\.\d{3} on 4 of 8 items \(", err)) == 2


def test_the_plan_line_says_when_the_null_baseline_is_estimated_too(tmp_path, tiny_model_dir, tiny_data_dir):
    lines: list[str] = []
    run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews", methods="null,generic",
              output=tmp_path, profile="quick", data_dir=str(tiny_data_dir), progress=False, echo=lines.append,
              budget=Budget(0.25, min_items=2, full_methods=(), design="balanced"), dry_run=True,
              overrides={"instructions_per_method": 2, "test_sample": 8, "settings": ["zero_shot"]})
    (plan_line,) = [line for line in lines if line.startswith("budget 0.25")]
    # null is dealt its quota like the generic instructions: max(ceil(0.25 * 8), 2, ceil(8 / 3)) = 3 each
    assert plan_line.startswith("budget 0.25 (seed 0, balanced design): 9 of 24 (instruction, item) cells")
    assert plan_line.endswith("every item >= 1 instruction; no method on every item (--budget-full-methods ''): "
                              "the null baseline is estimated too")


def test_a_budgeted_variant_scores_its_cells_as_the_full_run_does(budgeted_sweep, tmp_path, tiny_model_dir, tiny_data_dir):
    out, _ = budgeted_sweep
    full_dir = tmp_path / "full"
    _sweep(full_dir, tiny_model_dir, tiny_data_dir, None)
    full_samples = {}
    for path in full_dir.rglob("samples_*.jsonl"):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            full_samples[(path.name.split("_2")[0], row["doc_id"])] = row["acc"]
    checked = 0
    for path in out.rglob("samples_*.jsonl"):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            assert full_samples[(path.name.split("_2")[0], row["doc_id"])] == row["acc"]
            checked += 1
    assert checked == 72


def test_resume_skips_the_same_budget_and_refuses_another(budgeted_sweep, tiny_model_dir, tiny_data_dir):
    out, _ = budgeted_sweep
    lines: list[str] = []  # the design left out: the folder, begun with the balanced design, continues with it
    again = _sweep(out, tiny_model_dir, tiny_data_dir, Budget(0.25, min_items=2), echo=lines.append)
    assert again.skipped == 24 and again.evaluated == 0
    assert f"budget: {out / 'tiny_model0'} was begun with the balanced design, so it continues with it " \
           "(--budget-design balanced); the default design, uniform, needs another --output" in lines
    assert any(line.startswith("budget 0.25 (seed 0, balanced design)") for line in lines)
    with pytest.raises(SweepStoreError, match=r"\(seed 0, --budget-design balanced\); this run asks for --budget 0.25 "
                                              r"\(seed 0, --budget-design adaptive\)"):  # named: no longer the folder's
        _sweep(out, tiny_model_dir, tiny_data_dir, Budget(0.25, min_items=2, design="adaptive"), dry_run=True)
    with pytest.raises(SweepStoreError, match=r"computed with --budget 0.25 \(seed 0\); this run asks for --budget 0.25 \(seed 1\)"):
        _sweep(out, tiny_model_dir, tiny_data_dir, Budget(0.25, min_items=2, seed=1), dry_run=True)
    with pytest.raises(SweepStoreError, match=r"computed with --budget 0.25 \(seed 0\); this run asks for no --budget \(the full grid\)"):
        _sweep(out, tiny_model_dir, tiny_data_dir, None, dry_run=True)
    # the design alone differs: the message names it (a record without "design" is a uniform one)
    with pytest.raises(SweepStoreError, match=r"computed with --budget 0.25 \(seed 0, --budget-design balanced\); "
                                              r"this run asks for --budget 0.25 \(seed 0, --budget-design uniform\)"):
        _sweep(out, tiny_model_dir, tiny_data_dir, Budget(0.25, min_items=2, design="uniform"), dry_run=True)
    with pytest.raises(SweepStoreError, match=r"\(seed 0, --budget-min-items 2\); this run asks for --budget 0.25 "
                                              r"\(seed 0, --budget-min-items 3\)"):
        _sweep(out, tiny_model_dir, tiny_data_dir, Budget(0.25, min_items=3), dry_run=True)


@pytest.mark.parametrize("args, message", [
    (["--budget", "0"], "--budget 0.0: expected a share of the cells in (0, 1]"),
    (["--budget", "0.1", "--no-log-samples"], "--budget needs the per-sample logs"),
    (["--budget-seed", "3"], "only apply with --budget"),
    (["--budget", "0.1", "--budget-full-methods", "nul"], "--budget-full-methods: unknown method 'nul' (did you mean 'null'?); known: null, generic, promptsource, adhoc, gold, structured"),
])
def test_cli_budget_errors_are_one_line(tmp_path, args, message):
    proc = subprocess.run(
        [sys.executable, "-m", "instructeval_tasks.cli", "run", "--model", "hf", "--tasks", "agnews", "--output",
         str(tmp_path / "o"), *args], capture_output=True, text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"instructeval: error: {message}"] or message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_an_adaptive_budget_adds_rounds_of_new_cells_up_to_the_uniform_total(tmp_path, tiny_model_dir, tiny_data_dir):
    kwargs = dict(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews", methods="null,generic",
                  profile="quick", data_dir=str(tiny_data_dir), progress=False,
                  overrides={"instructions_per_method": 5, "test_sample": 8, "settings": ["zero_shot"]})
    lines: list[str] = []
    report = run_sweep(output=tmp_path / "a", budget=Budget(0.5, min_items=1, design="adaptive"), echo=lines.append, **kwargs)
    variants = _variants(tmp_path / "a")
    first = {n: v for n, v in variants.items() if v["meta"]["budget"]["round"] == 0}
    later = {n: v for n, v in variants.items() if v["meta"]["budget"]["round"] > 0}
    assert len(first) == 6 and later and report.evaluated == len(variants)
    # the first slice: a quarter of each generic instruction's items (half the budget), null all 8
    assert all(len(v["meta"]["budget"]["items"]) == 2 for n, v in first.items() if "generic" in n)
    assert {v["meta"]["budget"]["round"] for v in later.values()} <= {1, 2} and not any("null" in n for n in later)
    cells: dict[str, set] = collections.defaultdict(set)
    for name, v in variants.items():
        base = name.split("__r")[0] if v["meta"]["budget"]["round"] else name
        items = set(v["meta"]["budget"]["items"])
        assert not cells[base] & items  # a later round never re-evaluates a cell
        cells[base] |= items
        samples = list((tmp_path / "a").rglob(f"samples_{name}_[0-9]*.jsonl"))
        assert [json.loads(line)["doc_id"] for line in samples[0].read_text().splitlines()] == sorted(items)
    uniform = assign_cells([n for n in first], [0] * 8, Budget(0.5, min_items=1), "agnews:zs",
                           full=[n for n in first if "null" in n])
    assert sum(map(len, cells.values())) == sum(map(len, uniform.values())) == first[next(iter(first))]["meta"]["budget"]["grid_cells"]
    assert any(line.startswith("adaptive round 1 of 2:") for line in lines)
    assert any(line.endswith(f"adaptive: {sum(len(v['meta']['budget']['items']) for v in first.values())} now, the rest in 2 rounds")
               for line in lines)

    again = run_sweep(output=tmp_path / "a", budget=Budget(0.5, min_items=1, design="adaptive"), **kwargs)
    assert again.evaluated == 0 and again.skipped == len(variants)  # the rounds are re-derived, not re-run

    from instructeval_aggregation import aggregate, load_runs

    result = aggregate(load_runs([tmp_path / "a"]), n_boot=0, estimate_draws=20)
    grid = result.budget.grids.iloc[0]
    assert grid["observed_cells"] == sum(map(len, cells.values())) and grid["n_instructions"] == 6
    assert grid["item_classes"] == 4  # AG News's four labels, read from the harness's per-sample targets
    # every label's log-likelihood in the harness's samples, the labels' token counts in the results:
    # the grid is estimated from the label scores, the rounds' cells with the first slice's
    assert grid["estimator"] == "choice scores (log-likelihood per token of 4 labels)"
    # and the rounds chose their cells from the same scores, as their records say
    assert {v["meta"]["budget"]["allocation"] for v in later.values()} == {"choice scores"}
    assert not any("allocation" in v["meta"]["budget"] for v in first.values())
    assert len(result.budget.instructions) == 6  # one row per instruction, its rounds joined
    assert sorted(result.instructions["instruction"]) == sorted(v["meta"]["instruction_id"] for v in first.values())

    # a round saved on other cells than the saved earlier rounds now give (another version's
    # allocation): the rerun refuses, naming the round and how to replan it
    name = sorted(later)[0]
    path = next(p for p in (tmp_path / "a").rglob("results_*.json") if name in json.loads(p.read_text())["results"])
    data = json.loads(path.read_text())
    data["configs"][name]["metadata"]["variant_fingerprint"] = "planned-elsewhere"
    path.write_text(json.dumps(data))
    with pytest.raises(SweepStoreError, match=r"holds adaptive round \d of .*__r1, __r2"):
        run_sweep(output=tmp_path / "a", budget=Budget(0.5, min_items=1, design="adaptive"), **kwargs)


def test_a_round_chooses_the_cells_the_label_scores_are_least_sure_of():
    from instructeval_tasks.estimation.choice_scores import ChoiceScores, choice_grid
    from instructeval_tasks.sweep.budget import next_round_cells, observed_cells

    # instruction "a" saw all 20 items, "b" items 0-9; both answered every item right. By the answers
    # items 10-19 are alike; by a's scores 10-14 are sure (gold far ahead) and 15-19 close calls
    lean = np.array([2.0] * 5 + [1.0] * 5 + [3.0] * 5 + [0.05] * 5)  # gold's score minus the other's
    gold = np.arange(20) % 2
    lls = np.stack([np.where(gold == 0, lean / 2, -lean / 2), np.where(gold == 0, -lean / 2, lean / 2)], axis=1)
    seen = {"a": list(range(20)), "b": list(range(10))}
    observed = {name: {j: 1.0 for j in items} for name, items in seen.items()}
    methods = {"a": "generic", "b": "generic"}
    targets = {j: str(gold[j]) for j in range(20)}
    cells = observed_cells(observed, methods, 20, targets)
    scored = [(i, ChoiceScores(np.array(items), list(lls[items]), [(" x", " y")] * len(items), gold[items]))
              for i, items in enumerate(seen.values())]
    choice = choice_grid(cells, scored, "acc", [None])
    assert not isinstance(choice, str), choice
    assert next_round_cells(observed, methods, 20, 35, 1, targets=targets, choice=choice) == {"b": [15, 16, 17, 18, 19]}
    assert next_round_cells(observed, methods, 20, 35, 1, targets=targets) != {"b": [15, 16, 17, 18, 19]}


def test_the_adaptive_design_reads_logs_whose_texts_hold_unicode_line_breaks(tmp_path):
    from types import SimpleNamespace

    from instructeval_tasks.sweep.adaptive import saved_cells

    rows = [{"doc_id": j, "doc": {"text": f"a review\x85with NEL{j}\u2028and LS"}, "target": j % 2, "acc": float(j % 2)}
            for j in range(3)]
    log = tmp_path / "samples_instructeval_imdb__null__zs_2026-01-01T00-00-00.000001.jsonl"
    log.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    targets: dict = {}
    assert saved_cells(SimpleNamespace(root=tmp_path), "instructeval_imdb__null__zs", targets) == {0: 0.0, 1: 1.0, 2: 0.0}
    assert targets == {0: "0", 1: "1", 2: "0"}  # the gold classes the adaptive rounds' fit gives their own effects


def test_the_cli_offers_every_design_and_defaults_to_the_budgets_default():
    from instructeval_tasks.cli import build_parser
    from instructeval_tasks.sweep.budget import DEFAULT_DESIGN, DESIGNS

    parser = build_parser()
    run = next(a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "run")[1]
    design = next(a for a in run._actions if a.dest == "budget_design")
    assert tuple(design.choices) == DESIGNS
    assert design.help.startswith(f"{DEFAULT_DESIGN} (default)")


def test_the_cli_budget_is_uniform_by_default(tmp_path, tiny_model_dir, tiny_data_dir):
    proc = subprocess.run(
        [sys.executable, "-m", "instructeval_tasks.cli", "run", "--model", "hf", "--model_args",
         f"pretrained={tiny_model_dir},dtype=float32", "--tasks", "agnews", "--methods", "null,generic",
         "--instructions-per-method", "5", "--profile", "quick", "--test-sample", "8", "--settings", "zero_shot",
         "--data-dir", str(tiny_data_dir), "--output", str(tmp_path / "o"), "--budget", "0.5", "--budget-min-items", "1", "--dry-run"],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr
    # the uniform design's cells at 0.5: null on every item (8), the 5 others on 4 items each
    assert "budget 0.5 (seed 0, uniform design): 28 of 48 (instruction, item) cells" in proc.stderr
    assert "every instruction >= 4 items" in proc.stderr and "adaptive" not in proc.stderr


def test_the_cli_budget_deals_balanced_cells(tmp_path, tiny_model_dir, tiny_data_dir):
    out = tmp_path / "o"
    proc = subprocess.run(
        [sys.executable, "-m", "instructeval_tasks.cli", "run", "--model", "hf", "--model_args",
         f"pretrained={tiny_model_dir},dtype=float32", "--tasks", "agnews", "--methods", "null,generic,adhoc",
         "--instructions-per-method", "20", "--profile", "quick", "--test-sample", "8", "--settings", "zero_shot",
         "--data-dir", str(tiny_data_dir), "--output", str(out), "--budget", "0.25", "--budget-min-items", "1",
         "--budget-design", "balanced"],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "budget 0.25 (seed 0, balanced design): 58 of 208 (instruction, item) cells" in proc.stderr
    assert "every instruction >= 1 items" in proc.stderr  # the fewest dealt, not the floor
    records = {name: v["meta"]["budget"] for name, v in _variants(out).items()}
    by_method = collections.defaultdict(list)
    for name, record in records.items():
        assert record["design"] == "balanced" and record["min_items"] == 1
        by_method[name.split("__")[1].split("-")[0]].append(len(record["items"]))
    # 25 instructions x max(ceil(0.25 * 8), 1) = 50 cells (the uniform design: 2 each); sqrt(5) : sqrt(20)
    # gives the 5 generic 3.33 items each and the 20 ad hoc 1.67; whole items, remainders largest first
    assert by_method["null"] == [8]
    assert by_method["generic"] == [3] * 5 and sorted(by_method["adhoc"]) == [1] * 5 + [2] * 15


def test_adaptive_rounds_share_cells_among_methods_as_the_balanced_design_does():
    from instructeval_tasks.sweep.budget import next_round_cells

    # two methods whose instructions look alike: 2 "small" and 8 "big" instructions, each seen on the
    # same 6 of 60 items with the same scores, so every unevaluated cell is equally uncertain
    names = [f"small-{k}" for k in range(2)] + [f"big-{k}" for k in range(8)]
    methods = {name: name.split("-")[0] for name in names}
    observed = {name: {j: float(j % 2) for j in range(6)} for name in names}
    chosen = next_round_cells(observed, methods, 60, 10 * 6 + 200, 1)
    per = {m: sum(len(chosen.get(n, [])) for n in names if methods[n] == m) for m in ("small", "big")}
    assert sum(per.values()) == 200
    # a method's share goes as the square root of its instruction count: 2 against 8 is 1 to 2
    assert per["big"] / per["small"] == pytest.approx(2.0, abs=0.1)


def test_budget_extend_brings_a_saved_budgeted_folder_to_a_larger_share_keeping_its_cells(tmp_path, tiny_model_dir,
                                                                                            tiny_data_dir):
    from instructeval_tasks.sweep.budget import dealt_cells

    kwargs = dict(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews", methods="null,generic",
                  profile="quick", data_dir=str(tiny_data_dir), progress=False, output=tmp_path / "a",
                  overrides={"instructions_per_method": 5, "test_sample": 8, "settings": ["zero_shot"]})
    base = run_sweep(budget=Budget(0.25, min_items=1, design="balanced"), **kwargs)
    saved = _variants(tmp_path / "a")
    assert base.evaluated == 6 and sum(len(v["meta"]["budget"]["items"]) for v in saved.values()) == 8 + 5 * 2

    lines: list[str] = []
    extended = run_sweep(budget=Budget(0.25, min_items=1, design="balanced", extend_to=0.5), echo=lines.append, **kwargs)
    variants = _variants(tmp_path / "a")
    rounds = {n: v for n, v in variants.items() if n not in saved}
    for name, v in saved.items():  # the saved cells are kept as they were
        assert variants[name]["meta"] == v["meta"]
    assert extended.evaluated == len(rounds) > 0 and extended.skipped == 6
    assert {v["meta"]["budget"]["extend"] for v in rounds.values()} == {0.5}
    assert {v["meta"]["budget"]["round"] for v in rounds.values()} <= {1, 2} and not any("null" in n for n in rounds)

    def cells_of(found: dict[str, dict]) -> dict[str, set]:
        cells: dict[str, set] = collections.defaultdict(set)
        for name, v in found.items():
            items = set(v["meta"]["budget"]["items"])
            assert not cells[name.split("__r")[0]] & items  # no cell is evaluated twice
            cells[name.split("__r")[0]] |= items
        return cells

    # the grid ends with the balanced design's cells at 0.5: null on 8 items, 5 generic x 4
    methods = ["null"] + ["generic"] * 5
    assert sum(map(len, cells_of(variants).values())) == dealt_cells(methods, 8, Budget(0.5, min_items=1, design="balanced")) == 28
    assert any(line.startswith("budget extension to 0.5: the grids brought to the balanced design's cells at 0.5, 28 of 48")
               for line in lines), lines
    assert any(line.startswith("extension to 0.5, round 1 of 2:") for line in lines), lines
    assert extended.plan["budget"]["extend_cells"] == 28

    assert run_sweep(budget=Budget(0.25, min_items=1, extend_to=0.5), **kwargs).evaluated == 0  # re-derived
    assert run_sweep(budget=Budget(0.25, min_items=1), **kwargs).evaluated == 0  # a plain resume keeps them

    further = run_sweep(budget=Budget(0.25, min_items=1, extend_to=0.75), **kwargs)  # 0.5's rounds first, then 0.75's
    later = {n: v for n, v in _variants(tmp_path / "a").items() if n not in variants}
    assert further.evaluated == len(later) > 0 and {v["meta"]["budget"]["round"] for v in later.values()} <= {3, 4}
    assert {v["meta"]["budget"]["extend"] for v in later.values()} == {0.75}
    assert sum(map(len, cells_of(_variants(tmp_path / "a")).values())) == 8 + 5 * 6
    preview: list[str] = []  # a dry run says the rounds come after what it counts
    run_sweep(budget=Budget(0.25, min_items=1, extend_to=0.75), dry_run=True, echo=preview.append, **kwargs)
    assert "then the extension to 0.5 in rounds 1-2, the extension to 0.75 in rounds 3-4: each round's cells are " \
           "chosen from the scores saved before it, so they are not counted here" in preview, preview

    with pytest.raises(BudgetError, match=r"holds grids extended to 0\.75 .*Resume with --budget-extend 0\.75"):
        run_sweep(budget=Budget(0.25, min_items=1, extend_to=0.5), **kwargs)
    # asking the larger share as --budget names the option that keeps the cells
    with pytest.raises(SweepStoreError, match=r"--budget 0\.25 --budget-extend 0\.5\)"):
        run_sweep(budget=Budget(0.5, min_items=1), **kwargs)

    from instructeval_aggregation import aggregate, load_runs

    result = aggregate(load_runs([tmp_path / "a"]), n_boot=0, estimate_draws=20)
    grid = result.budget.grids.iloc[0]
    assert grid["observed_cells"] == 38 and grid["n_instructions"] == 6
    assert grid["design"] == "balanced, extended to 0.5, extended to 0.75"
    assert len(result.budget.instructions) == 6
    from instructeval_aggregation.report import write_report

    write_report(result, tmp_path / "report")
    assert "38 of 48 cells observed (79.2%, balanced design, extended to 0.5, extended to 0.75)" in (
        tmp_path / "report" / "report.html").read_text()


def test_budget_extend_is_checked_before_anything_runs(tmp_path):
    for args, message in [
        (["--budget", "0.25", "--budget-extend", "0.1"], "--budget-extend 0.1: expected a share above --budget 0.25 and at most 1"),
        (["--budget-extend", "0.5"], "only apply with --budget F"),
        (["--budget", "0.1", "--budget-extend", "1.5"], "--budget-extend 1.5: expected a share above --budget 0.1 and at most 1"),
    ]:
        proc = subprocess.run([sys.executable, "-m", "instructeval_tasks.cli", "run", "--model", "hf", "--tasks", "agnews",
                               "--output", str(tmp_path / "o"), *args], capture_output=True, text=True)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert message in proc.stderr
    assert not (tmp_path / "o").exists()


def test_an_extension_s_rounds_follow_the_adaptive_design_s_and_the_extensions_the_folder_holds():
    from instructeval_tasks.sweep.budget import budget_rounds

    rounds = budget_rounds(Budget(0.1, design="adaptive", extend_to=0.5), [0.25])
    assert [(r.number, r.extend, r.rounds_left) for r in rounds] == [
        (1, None, 2), (2, None, 1), (3, 0.25, 2), (4, 0.25, 1), (5, 0.5, 2), (6, 0.5, 1)]
    assert [r.number for r in budget_rounds(Budget(0.1, design="adaptive"), [0.25])] == [1, 2]  # a plain resume
    assert budget_rounds(Budget(0.1, design="balanced", extend_to=0.25), [0.25])[-1].number == 2  # the saved extension, re-derived
    with pytest.raises(BudgetError, match=r"runs/x holds grids extended to 0\.5 .*--budget-extend 0\.25 would plan other"):
        budget_rounds(Budget(0.1, design="balanced", extend_to=0.25), [0.5], "runs/x")
