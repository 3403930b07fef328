"""``instructeval run --harness-tasks``: lm-eval's own tasks swept over instructions, the null variant
being the stock task (the same requests as a plain ``lm_eval`` run on the same items)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from instructeval_tasks.harness.local_data import LocalDataError, local_splits
from instructeval_tasks.harness.tasks import (
    HarnessTaskError,
    expand_refs,
    instructed_config,
    parse_harness_tasks,
    stock_task_config,
)
from instructeval_tasks.sweep import run_sweep
from instructeval_tasks.sweep.budget import Budget
from instructeval_tasks.sweep.store import SweepStoreError

from harness_outputs import _entries, _same_answers, _samples

GSM8K_ROWS = [
    {"question": f"Tom has {a} apples and buys {b} more. How many apples does he have?",
     "answer": f"Tom has {a} + {b} = {a + b} apples.\n#### {a + b}"}
    for a, b in [(1, 2), (3, 4), (2, 2), (5, 1), (6, 3), (7, 2), (4, 4), (9, 1), (8, 3), (2, 7)]
]
NAVIGATE_ROWS = [
    {"input": f"If you follow these instructions, do you return to the starting point? Take {n} steps. Turn around. "
              f"Take {n if n % 2 else n + 1} steps.\nOptions:\n- Yes\n- No", "target": "Yes" if n % 2 else "No"}
    for n in range(1, 9)
]


@pytest.fixture(scope="module")
def harness_data(tiny_data_dir, tmp_path_factory) -> Path:
    """Local copies in the HF layouts the stock tasks read: HellaSwag (the tiny rows), GSM8K, BBH navigate."""
    root = tmp_path_factory.mktemp("harness_data")
    shutil.copytree(tiny_data_dir / "hellaswag", root / "hellaswag")
    (root / "gsm8k").mkdir()
    for split, rows in (("train", GSM8K_ROWS[:6]), ("eval", GSM8K_ROWS[6:])):
        (root / "gsm8k" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "bbh" / "data").mkdir(parents=True)
    (root / "bbh" / "data" / "navigate.json").write_text(json.dumps({"canary": "c", "examples": NAVIGATE_ROWS}))
    return root


@pytest.fixture(scope="module")
def harness_sweep(tiny_model_dir, harness_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("harness_sweep")
    report = run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks=None, methods="null,generic",
                       output=out, profile="quick", overrides={"instructions_per_method": 1, "test_sample": 3},
                       data_dir=str(harness_data), device="cpu", progress=False,
                       harness_tasks="hellaswag:2,gsm8k:2,bbh_fewshot_navigate")
    return out, report


def test_same_answers_allows_float_rounding_only():
    assert _same_answers([["-34.882503509521484", "False"]], [["-34.88249969482422", "False"]])
    assert not _same_answers([["-34.88", "False"]], [["-34.87", "False"]])
    assert not _same_answers([["-34.88", "False"]], [["-34.88", "True"]])
    assert not _same_answers(["Paris"], ["Pariss"]) and not _same_answers([["1"]], [["1", "2"]])


# ------------------------------------------------------------------------------------------ units


def test_parse_and_expand_harness_task_names():
    assert parse_harness_tasks("hellaswag:10, boolq") == [
        type(parse_harness_tasks("x")[0])("hellaswag", 10), type(parse_harness_tasks("x")[0])("boolq", None)]
    for bad, message in (("hellaswag:ten", "n-shot"), ("hellaswag,,boolq", "empty entry"), ("boolq,boolq", "twice")):
        with pytest.raises(HarnessTaskError, match=message):
            parse_harness_tasks(bad)
    with pytest.raises(HarnessTaskError, match="did you mean 'hellaswag'"):
        expand_refs(parse_harness_tasks("helaswag"))
    with pytest.raises(HarnessTaskError, match="InstructEval task; give it to --tasks"):
        expand_refs(parse_harness_tasks("instructeval_agnews"))
    group = expand_refs(parse_harness_tasks("bbh_fewshot:1"))
    assert len(group) == 27 and all(r.num_fewshot == 1 and r.name.startswith("bbh_fewshot_") for r in group)


def test_the_instruction_goes_where_the_harness_puts_a_description():
    stock = stock_task_config("bbh_fewshot_navigate")
    cfg = instructed_config(stock, name="n__g", instruction="Think {{carefully}}:", num_fewshot=None, metadata={"a": 1})
    # escaped for the harness's Jinja, then the task's own delimiter, then its own description
    assert cfg["description"] == "{% raw %}Think {{carefully}}:{% endraw %}\n\n" + stock["description"]
    null = instructed_config(stock, name="n__null", instruction="", num_fewshot=None, metadata={"a": 1})
    assert {k: v for k, v in null.items() if k not in ("task", "metadata")} == \
        {k: v for k, v in stock.items() if k not in ("task", "metadata", "task_alias")}
    with pytest.raises(HarnessTaskError, match="unknown placement"):
        instructed_config(stock, name="x", instruction="a", num_fewshot=None, metadata={}, placement="chat-sytem")


def test_local_data_names_what_is_missing(harness_data, tmp_path):
    with pytest.raises(LocalDataError, match="needs split 'test_r1'"):
        local_splits("anli_r1", stock_task_config("anli_r1"), str(harness_data))
    with pytest.raises(LocalDataError, match=r"the folder --data-dir needs: .*boolq"):
        local_splits("boolq", stock_task_config("boolq"), str(tmp_path))
    with pytest.raises(LocalDataError, match="no local copy of its dataset"):
        local_splits("sciq", stock_task_config("sciq"), str(harness_data))
    rows, record = local_splits("gsm8k", stock_task_config("gsm8k"), str(harness_data))
    assert [len(rows[s]) for s in ("train", "test")] == [6, 4] and set(record["files"]) == {"train", "test"}


# ------------------------------------------------------------------------------------------ the sweep


def test_a_zero_shot_task_does_not_need_its_training_split(shared_data_dir):
    # the shared ANLI copy has R3's test split but not its train split: fine 0-shot, an error with demos
    rows, record = local_splits("anli_r3", stock_task_config("anli_r3"), str(shared_data_dir), zero_shot=True)
    assert rows["train_r3"] == [] and record["files"]["train_r3"] == {"absent": "0-shot: no demos are drawn from it"}
    assert len(rows["test_r3"]) == 1200 and record["files"]["test_r3"]["sha256"]
    with pytest.raises(LocalDataError, match="needs split 'train_r3'"):
        local_splits("anli_r3", stock_task_config("anli_r3"), str(shared_data_dir))
    with pytest.raises(LocalDataError, match="needs split 'test_r1'"):  # the evaluated split stays required
        local_splits("anli_r1", stock_task_config("anli_r1"), str(shared_data_dir), zero_shot=True)


def test_each_harness_task_gets_null_and_generic_with_the_instruction_first(harness_sweep):
    out, report = harness_sweep
    entries = _entries(out)
    generic = next(e["meta"]["harness"]["instruction_id"] for e in entries.values() if e["meta"]["harness"]["method"] == "generic")
    assert sorted(entries) == sorted(f"{t}__{i}" for t in ("hellaswag", "gsm8k", "bbh_fewshot_navigate")
                                     for i in ("null", generic))
    assert report.evaluated == 6
    meta = entries[f"gsm8k__{generic}"]["meta"]["harness"]
    assert (meta["task"], meta["num_fewshot"], meta["method"], meta["placement"]) == ("gsm8k", 2, "generic", "description")
    null_ctx = {k: s["arguments"]["gen_args_0"]["arg_0"] for k, s in _samples(out, "bbh_fewshot_navigate__null").items()}
    inst_ctx = {k: s["arguments"]["gen_args_0"]["arg_0"] for k, s in _samples(out, f"bbh_fewshot_navigate__{generic}").items()}
    text = meta["instruction"]
    assert null_ctx.keys() == inst_ctx.keys()
    for key, ctx in null_ctx.items():  # exactly one thing changes: the instruction, then a blank line
        assert inst_ctx[key] == f"{text}\n\n{ctx}"
        assert ctx.startswith("Given a series of navigation instructions")  # the stock task's own description
    # the same items for every instruction, recorded as eval rows with a replay command for the stock task
    ids = {e["meta"]["harness"]["task"]: e["meta"]["harness"]["test_ids"] for e in entries.values()}
    assert all(len(v) == 3 for v in ids.values())
    replay = entries["hellaswag__null"]["meta"]["harness"]["replay"]
    assert replay == f"lm_eval --tasks hellaswag --num_fewshot 2 --seed 0,1234,1234,1234 --samples '{json.dumps({'hellaswag': ids['hellaswag']})}'"


@pytest.mark.parametrize("task,shot,include", [("hellaswag", 2, "hellaswag"), ("gsm8k", 2, "gsm8k")])
def test_the_null_variant_is_the_stock_task(harness_sweep, harness_data, tiny_model_dir, tmp_path, task, shot, include):
    """A plain ``lm_eval`` run of the stock YAML (reading the same local rows) on the recorded items sends
    the very same requests and gets the same answers and scores as the null variant."""
    out, _ = harness_sweep
    entry = _entries(out)[f"{task}__null"]
    ids = entry["meta"]["harness"]["test_ids"]
    from instructeval_tasks.harness.tasks import harness_index

    stock_yaml = harness_index()[task].yaml_path
    files = {"hellaswag": {"train": "hellaswag/train.jsonl", "validation": "hellaswag/eval.jsonl"},
             "gsm8k": {"train": "gsm8k/train.jsonl", "test": "gsm8k/eval.jsonl"}}[task]
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / f"{task}_local.yaml").write_text(
        f"include: {stock_yaml}\ntask: {task}_local\ndataset_path: json\ndataset_name: null\ndataset_kwargs:\n  data_files:\n"
        + "".join(f"    {split}: {harness_data / rel}\n" for split, rel in files.items()))
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32",
         "--include_path", str(tasks), "--tasks", f"{task}_local", "--num_fewshot", str(shot),
         "--seed", "0,1234,1234,1234", "--samples", json.dumps({f"{task}_local": ids}), "--device", "cpu",
         "--batch_size", "8", "--output_path", str(tmp_path / "plain"), "--log_samples"],
        capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    plain = _samples(tmp_path / "plain", f"{task}_local")
    ours = _samples(out, f"{task}__null")
    assert sorted(plain) == sorted(ours) and len({d for d, _ in ours}) == len(ids)
    for key, sample in ours.items():
        assert plain[key]["arguments"] == sample["arguments"]  # request strings, byte for byte
        # the same log-likelihoods / generations: the sweep evaluates a harness task's variants in one
        # call, so its batches (and their padding) differ from the plain run's; float32 rounding
        # then moves a log-likelihood by a few 1e-7 of its value, nothing else
        assert _same_answers(plain[key]["resps"], sample["resps"]), (plain[key]["resps"], sample["resps"])
        assert _same_answers(plain[key]["filtered_resps"], sample["filtered_resps"])
    plain_scores = json.loads(next((tmp_path / "plain").rglob("results_*.json")).read_text())["results"][f"{task}_local"]
    for metric, value in entry["result"].items():
        if "," in metric and metric != "alias":
            assert plain_scores[metric] == pytest.approx(value, abs=0), metric


def test_rerun_skips_and_another_nshot_is_refused(harness_sweep, tiny_model_dir, harness_data):
    out, _ = harness_sweep
    common = dict(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks=None, methods="null,generic",
                  output=out, profile="quick", overrides={"instructions_per_method": 1, "test_sample": 3},
                  data_dir=str(harness_data), device="cpu", progress=False)
    again = run_sweep(**common, harness_tasks="hellaswag:2,gsm8k:2,bbh_fewshot_navigate")
    assert again.evaluated == 0 and not again.result_files
    with pytest.raises(SweepStoreError, match="different protocol"):
        run_sweep(**common, harness_tasks="hellaswag:3", dry_run=True)


def test_cli_errors_are_one_line(tmp_path, tiny_model_dir, harness_data):
    base = [sys.executable, "-m", "instructeval_tasks.cli", "run", "--model", "hf", "--model_args",
            f"pretrained={tiny_model_dir}", "--output", str(tmp_path / "o"), "--data-dir", str(harness_data)]
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    no_data = [a for a in base if a not in ("--data-dir", str(harness_data))]
    for args, message in ((base + ["--harness-tasks", "helaswag"], "did you mean 'hellaswag'"),
                          (base + ["--harness-tasks", "anli_r1"], "needs split 'test_r1'"),
                          (base, "give --tasks"),
                          (no_data + ["--harness-tasks", "gsm8k:5"], "offline, give --data-dir DIR holding gsm8k/eval.jsonl, gsm8k/train.jsonl")):
        done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 2, done.stderr[-2000:]
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("instructeval: error: ") and message in lines[0], done.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_test_sample_larger_than_the_eval_file_is_refused_as_the_nine_tasks_refuse_it(dry_run, tiny_model_dir,
                                                                                      harness_data, tmp_path, capsys):
    """The 8 HellaSwag rows cannot give 100 items: refused before the model loads (it scored the 8 rows)."""
    from instructeval_tasks import cli

    out = tmp_path / "out"
    args = ["run", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir}", "--harness-tasks", "hellaswag",
            "--methods", "null", "--test-sample", "100", "--data-dir", str(harness_data), "--output", str(out),
            "--device", "cpu", *(["--dry-run"] if dry_run else [])]
    assert cli.main(args) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "instructeval: error: hellaswag: test_sample=100 (--test-sample, or the profile's) cannot be drawn from an eval "
        "split of 8 rows (cannot sample 100 items from a split of 8); use a smaller --test-sample"]
    assert not out.exists()
    every = run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir}", tasks=None, methods="null", output=out,
                      profile="quick", overrides={"test_sample": 8}, data_dir=str(harness_data), progress=False,
                      harness_tasks="hellaswag", dry_run=True)  # as many as the rows: every row, as before
    assert every.planned == 1


# ------------------------------------------------------------------------------------------ placements

def test_chat_placements_put_the_instruction_in_the_system_or_the_first_user_turn(tiny_chat_model, harness_data, tmp_path):
    report = run_sweep(model="hf", model_args=f"pretrained={tiny_chat_model},dtype=float32", tasks=None, methods="null,generic",
                       output=tmp_path, profile="quick", overrides={"instructions_per_method": 1, "test_sample": 2},
                       data_dir=str(harness_data), device="cpu", progress=False, harness_tasks="bbh_fewshot_navigate:2,hellaswag:1",
                       placements=("description", "chat-system", "chat-user"))
    assert report.evaluated == 12
    entries = _entries(tmp_path)
    generic = next(e["meta"]["harness"]["instruction_id"] for e in entries.values() if e["meta"]["harness"]["method"] == "generic")
    text = entries[f"hellaswag__{generic}"]["meta"]["harness"]["instruction"]

    def first_context(name: str) -> str:
        return next(iter(_samples(tmp_path, name).values()))["arguments"]["gen_args_0"]["arg_0"]

    # no own description (HellaSwag): the system turn is the instruction alone, no stray blank line
    assert first_context(f"hellaswag__{generic}__chat-system").startswith(f"<|system|>{text}<|end|>\n<|user|>")
    assert first_context(f"hellaswag__{generic}__chat-user").startswith(f"<|user|>{text}\n\n")
    null_user = first_context("hellaswag__null__chat-user")
    assert first_context(f"hellaswag__{generic}__chat-user") == null_user.replace("<|user|>", f"<|user|>{text}\n\n", 1)
    assert first_context("hellaswag__null__chat-system") == null_user  # the null variant: lm_eval --apply_chat_template
    # an own description (BBH) stays the system turn; chat-user leaves it there
    own = "Given a series of navigation instructions, determine whether one would end up back at the starting point."
    assert first_context(f"bbh_fewshot_navigate__{generic}__chat-system").startswith(f"<|system|>{text}\n\n{own}")
    assert first_context(f"bbh_fewshot_navigate__{generic}__chat-user").startswith(f"<|system|>{own}\n\n<|end|>\n<|user|>{text}\n\nQ: ")
    meta = entries["hellaswag__null__chat-system"]["meta"]["harness"]
    assert meta["placement"] == "chat-system" and meta["fewshot_as_multiturn"] is True
    assert meta["replay"].endswith(f"--samples '{json.dumps({'hellaswag': meta['test_ids']})}'") and "--apply_chat_template" in meta["replay"]


def test_a_chat_placement_needs_a_chat_template(tiny_model_dir, harness_data, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "instructeval_tasks.cli", "run", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir}",
         "--output", str(tmp_path / "o"), "--data-dir", str(harness_data), "--harness-tasks", "hellaswag:1",
         "--placements", "chat-system", "--test-sample", "2", "--device", "cpu"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("instructeval: error: --placements chat-system/chat-user need a chat template")
    assert not list((tmp_path / "o").rglob("results_*.json"))


def test_instructeval_task_with_apply_chat_template_has_no_stray_blank_line(tiny_chat_model, tiny_data_dir, tmp_path):
    """``lm_eval --apply_chat_template`` puts an InstructEval task's instruction in the system turn, alone."""
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    repo = Path(__file__).resolve().parents[2]
    metadata = json.dumps({"data_dir": str(tiny_data_dir), "test_sample": 2, "method": "generic", "instruction_id": "generic-0"})
    done = subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={tiny_chat_model},dtype=float32",
         "--include_path", str(repo / "instructeval_tasks"), "--tasks", "instructeval_agnews", "--apply_chat_template",
         "--metadata", metadata, "--device", "cpu", "--batch_size", "4", "--output_path", str(tmp_path / "out"), "--log_samples"],
        capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = list((tmp_path / "out").rglob("samples_instructeval_agnews_*.jsonl"))
    context = json.loads(path.read_text().splitlines()[0])["arguments"]["gen_args_0"]["arg_0"]
    assert context.startswith("<|system|>Solve the following task:<|end|>\n<|user|>"), context[:200]
    (results,) = list((tmp_path / "out").rglob("results_*.json"))
    assert json.loads(results.read_text())["configs"]["instructeval_agnews"]["metadata"]["placement"] == "chat-system"


# ------------------------------------------------------------------------------------------ budget


def test_a_budget_gives_each_instruction_its_own_cells_in_the_one_harness_call(tiny_chat_model, harness_data, tmp_path):
    common = dict(model="hf", model_args=f"pretrained={tiny_chat_model},dtype=float32", tasks=None, methods="null,generic",
                  profile="quick", overrides={"instructions_per_method": 3, "test_sample": 6}, data_dir=str(harness_data),
                  device="cpu", progress=False, harness_tasks="hellaswag:1", placements=("description", "chat-system"))
    full = run_sweep(**common, output=tmp_path / "full")
    budgeted = run_sweep(**common, output=tmp_path / "budget", budget=Budget(0.25, seed=3, min_items=2))
    assert full.evaluated == budgeted.evaluated == 8
    plan = budgeted.plan["harness_budget"]
    assert budgeted.plan["budget"] is None  # no InstructEval grid in this run (the harness grids are under harness_budget)
    assert json.loads(next((tmp_path / "budget").rglob("sweep.json")).read_text())["harness_budget"] == plan
    # null on all 6 items in both placements; 3 generic x 2 items x 2 placements
    assert (plan["cells"], plan["grid_size"]) == (2 * 6 + 3 * 2 * 2, 6 * 8)
    entries, reference = _entries(tmp_path / "budget"), _entries(tmp_path / "full")
    cells: dict[str, list[int]] = {}
    covered: set[int] = set()
    for name, entry in entries.items():
        harness, record = entry["meta"]["harness"], entry["meta"]["budget"]
        ids = [harness["test_ids"][p] for p in record["items"]]
        assert sorted({doc for doc, _ in _samples(tmp_path / "budget", name)}) == ids
        if harness["method"] == "null":
            assert ids == harness["test_ids"] and harness["replay"]
        else:
            assert len(ids) == 2
            covered.update(ids)
        key = harness["instruction_id"]
        assert cells.setdefault(key, ids) == ids  # the same cells in both placements
        # the budget only leaves rows out: each cell's requests (its demos too) and scores are the full grid's
        for (doc, filt), row in _samples(tmp_path / "budget", name).items():
            same = _samples(tmp_path / "full", name)[(doc, filt)]
            assert row["arguments"] == same["arguments"], (name, doc)
            # the same requests; log-likelihoods equal up to the batch composition's float rounding
            ours = [float(r[0][0]) for r in row["resps"]]
            assert ours == pytest.approx([float(r[0][0]) for r in same["resps"]], rel=1e-5), name
            assert row["acc"] == same["acc"], (name, doc)
        assert reference[name]["meta"]["harness"]["test_ids"] == harness["test_ids"]
    assert covered < set(cells["null"]) and len(covered) > 2  # the instructions' cells differ
    # the aggregation estimates the grid from the cells: one row per placement, null exact
    from instructeval_aggregation.harness_effects import harness_effects, load_harness_results
    from instructeval_aggregation.issues import IssueLog

    issues = IssueLog()
    effects = harness_effects(load_harness_results([str(tmp_path / "budget")], issues), issues, n_boot=50, level=0.95,
                              seed="s", n_perm=50).effects
    assert not issues.items, issues.items
    assert sorted(effects["placement"]) == ["chat-system", "description"]
    assert list(effects["cells_share"]) == [pytest.approx((6 + 3 * 2) / 24)] * 2
    assert list(effects["stock"]) == [entries["hellaswag__null__chat-system"]["result"]["acc,none"],
                                      entries["hellaswag__null"]["result"]["acc,none"]]
    again = run_sweep(**common, output=tmp_path / "budget", budget=Budget(0.25, seed=3, min_items=2))
    assert again.evaluated == 0
    with pytest.raises(SweepStoreError, match="--budget"):
        run_sweep(**common, output=tmp_path / "budget", dry_run=True)


def test_a_placement_added_later_resumes_on_the_same_cells(tiny_chat_model, harness_data, tmp_path):
    common = dict(model="hf", model_args=f"pretrained={tiny_chat_model},dtype=float32", tasks=None, methods="null,generic",
                  profile="quick", overrides={"instructions_per_method": 2, "test_sample": 6}, data_dir=str(harness_data),
                  device="cpu", progress=False, harness_tasks="hellaswag:1", budget=Budget(0.25, seed=3, min_items=2),
                  output=tmp_path / "out")
    first = run_sweep(**common, placements=("description",))
    before = _entries(tmp_path / "out")
    both = run_sweep(**common, placements=("description", "chat-system"))
    assert (first.evaluated, both.evaluated) == (3, 3)  # the description variants resume; chat-system's run
    after = _entries(tmp_path / "out")
    for name, entry in before.items():
        assert after[name]["meta"] == entry["meta"]
        chat = after[f"{name}__chat-system"]["meta"]
        assert chat["budget"] == entry["meta"]["budget"]  # the same cells, the same one-placement grid record
    # per placement: null on 6 items, 2 generic x 3 (every item covered: ceil(6 / 2) >= 0.25 x 6)
    assert both.plan["harness_budget"]["grids"] == 2 and both.plan["harness_budget"]["cells"] == 2 * (6 + 2 * 3)


def test_an_adaptive_budget_adds_rounds_of_cells_on_the_full_grids_requests(tiny_chat_model, harness_data, tmp_path,
                                                                           monkeypatch):
    import instructeval_tasks.sweep.rounds as rounds

    fitted_targets: list[dict] = []  # the gold answers each round's fit was given (multiple choice: its classes)
    choose = rounds.next_round_cells
    monkeypatch.setattr(rounds, "next_round_cells",
                        lambda *args, **kw: fitted_targets.append(dict(kw["targets"])) or choose(*args, **kw))
    common = dict(model="hf", model_args=f"pretrained={tiny_chat_model},dtype=float32", tasks=None, methods="null,generic",
                  profile="quick", overrides={"instructions_per_method": 3, "test_sample": 6}, data_dir=str(harness_data),
                  device="cpu", progress=False, harness_tasks="hellaswag:1", placements=("description", "chat-system"))
    budget = Budget(0.5, seed=3, min_items=1, design="adaptive")
    full = run_sweep(**common, output=tmp_path / "full")
    lines: list[str] = []
    report = run_sweep(**common, output=tmp_path / "adaptive", budget=budget, echo=lines.append)
    plan = report.plan["harness_budget"]
    # the uniform design at 0.5 deals 3 generic x 3 items a placement; the first slice (0.25) 3 x 2
    assert (plan["cells"], plan["first_cells"]) == (2 * (6 + 3 * 3), 2 * (6 + 3 * 2))
    assert any("adaptive round 1 of 2 (harness tasks)" in line for line in lines), lines
    entries, reference = _entries(tmp_path / "adaptive"), _entries(tmp_path / "full")
    rounds = {name: entry for name, entry in entries.items() if entry["meta"]["budget"].get("round")}
    assert rounds and all("__r" in name for name in rounds)
    cells: dict[tuple[str, str], list[int]] = {}
    for entry in entries.values():
        harness = entry["meta"]["harness"]
        if harness["method"] == "generic":
            cells.setdefault((harness["placement"], harness["instruction_id"]), []).extend(entry["meta"]["budget"]["items"])
    # every round adds cells the instruction has not seen; each placement ends at the uniform design's cells
    assert all(len(items) == len(set(items)) for items in cells.values()), cells
    for placement in ("description", "chat-system"):
        assert sum(len(items) for (p, _), items in cells.items() if p == placement) == 3 * 3
    for name, entry in rounds.items():
        first = name.rsplit("__r", 1)[0]
        ids = [entry["meta"]["harness"]["test_ids"][p] for p in entry["meta"]["budget"]["items"]]
        assert sorted({doc for doc, _ in _samples(tmp_path / "adaptive", name)}) == ids
        for (doc, filt), row in _samples(tmp_path / "adaptive", name).items():  # the full grid's request and score
            same = _samples(tmp_path / "full", first)[(doc, filt)]
            assert row["arguments"] == same["arguments"] and row["acc"] == same["acc"], (name, doc)
        assert entry["meta"]["variant_fingerprint"] != entries[first]["meta"]["variant_fingerprint"]
        assert entry["meta"]["harness"]["test_ids"] == reference[first]["meta"]["harness"]["test_ids"]
    assert full.evaluated == 8 and report.evaluated == 8 + len(rounds)
    # the report joins an instruction's rounds into its row
    from instructeval_aggregation.harness_effects import harness_effects, load_harness_results
    from instructeval_aggregation.issues import IssueLog

    issues = IssueLog()
    effects = harness_effects(load_harness_results([str(tmp_path / "adaptive")], issues), issues, n_boot=50, level=0.95,
                              seed="s", n_perm=50).effects
    assert not issues.items, issues.items
    assert list(effects["n_instructions"]) == [4, 4]
    assert list(effects["cells_share"]) == [pytest.approx((6 + 3 * 3) / 24)] * 2
    # HellaSwag is multiple choice: the rounds' fits and the report's give each gold ending its own effects
    null = next(name for name, e in entries.items() if e["meta"]["harness"]["method"] == "null")
    ids = entries[null]["meta"]["harness"]["test_ids"]
    gold = {ids.index(doc): str(row["target"]) for (doc, _), row in _samples(tmp_path / "adaptive", null).items()}
    assert len(fitted_targets) == 2 * 2 and all(targets == gold for targets in fitted_targets)  # 2 rounds x 2 placements
    assert list(effects["item_classes"]) == [len(set(gold.values()))] * 2 and len(set(gold.values())) > 1
    again = run_sweep(**common, output=tmp_path / "adaptive", budget=budget)  # the rounds re-derived, nothing to run
    assert again.evaluated == 0


def test_budget_extend_adds_rounds_to_the_harness_grids_keeping_their_cells(tiny_chat_model, harness_data, tmp_path):
    from instructeval_tasks.sweep.budget import dealt_cells

    common = dict(model="hf", model_args=f"pretrained={tiny_chat_model},dtype=float32", tasks=None, methods="null,generic",
                  profile="quick", overrides={"instructions_per_method": 3, "test_sample": 6}, data_dir=str(harness_data),
                  device="cpu", progress=False, harness_tasks="hellaswag:1", placements=("description",),
                  output=tmp_path / "out")
    base = run_sweep(**common, budget=Budget(0.25, seed=3, min_items=1))
    saved = _entries(tmp_path / "out")
    lines: list[str] = []
    extended = run_sweep(**common, budget=Budget(0.25, seed=3, min_items=1, extend_to=0.75), echo=lines.append)
    entries = _entries(tmp_path / "out")
    rounds = {name: e for name, e in entries.items() if name not in saved}
    assert base.evaluated == 4 and extended.evaluated == len(rounds) > 0
    assert all(entries[name]["meta"] == e["meta"] for name, e in saved.items())
    assert {e["meta"]["budget"]["extend"] for e in rounds.values()} == {0.75}
    cells: dict[str, list[int]] = {}
    for name, entry in entries.items():
        cells.setdefault(name.split("__r")[0], []).extend(entry["meta"]["budget"]["items"])
    assert all(len(items) == len(set(items)) for items in cells.values())
    # the balanced design at 0.75: null on 6 items, 3 generic x 5 (the uniform design's quota, one method)
    target = dealt_cells(["null", "generic", "generic", "generic"], 6, Budget(0.75, min_items=1))
    assert sum(map(len, cells.values())) == target == 6 + 3 * 5
    assert extended.plan["harness_budget"]["extend_cells"] == target
    assert any("extension to 0.75, round 1 of 2 (harness tasks)" in line for line in lines), lines

    from instructeval_aggregation.harness_effects import harness_effects, load_harness_results
    from instructeval_aggregation.issues import IssueLog

    issues = IssueLog()
    effects = harness_effects(load_harness_results([str(tmp_path / "out")], issues), issues, n_boot=50, level=0.95,
                              seed="s", n_perm=50).effects
    assert not issues.items, issues.items
    assert list(effects["cells_share"]) == [pytest.approx(target / 24)]
    assert run_sweep(**common, budget=Budget(0.25, seed=3, min_items=1, extend_to=0.75)).evaluated == 0


# ------------------------------------------------------------------------------------------ shards


def test_shards_split_the_harness_tasks_and_together_make_the_whole(harness_sweep, tiny_model_dir, harness_data, tmp_path):
    whole, _ = harness_sweep
    common = dict(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks=None, methods="null,generic",
                  output=tmp_path, profile="quick", overrides={"instructions_per_method": 1, "test_sample": 3},
                  data_dir=str(harness_data), device="cpu", progress=False,
                  harness_tasks="hellaswag:2,gsm8k:2,bbh_fewshot_navigate")
    first = run_sweep(**common, shard="0/2")
    second = run_sweep(**common, shard="1/2")
    tasks_of = lambda report: {e["task"] for e in report.plan["harness"]}  # noqa: E731
    assert tasks_of(first) == {"hellaswag", "bbh_fewshot_navigate"} and tasks_of(second) == {"gsm8k"}
    assert set(_entries(tmp_path)) == set(_entries(whole)) and first.evaluated + second.evaluated == 6
    for name, entry in _entries(tmp_path).items():  # the same requests as the unsharded run
        assert entry["result"] == _entries(whole)[name]["result"], name
    assert run_sweep(**common).evaluated == 0


def test_local_rows_keep_texts_that_hold_unicode_line_breaks(tmp_path):
    from instructeval_tasks.harness.local_data import _read_rows

    rows = [{"text": "one\x85two"}, {"text": "three\u2028four"}]
    path = tmp_path / "eval.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert _read_rows(path, None) == rows


# ------------------------------------------------------------------------------------------ row designs

def _scored_doc_ids(out: Path) -> set[int]:
    (path,) = sorted(out.rglob("samples_hellaswag__null*_[0-9]*.jsonl"))
    return {json.loads(line)["doc_id"] for line in path.read_text().splitlines()}


def test_uniform_rows_are_a_plain_seeded_sample_and_balanced_ones_stay_as_folders_recorded_them(tiny_model_dir, harness_data,
                                                                                                tmp_path):
    """``--harness-rows uniform`` scores ``random.Random(seed).sample(range(rows), n)`` (so that the stock
    score estimates the whole split's) and records it; the default, balanced, records no key, so a folder
    begun before the option resumes; the two draws differ on the tiny HellaSwag rows (gold labels skewed)."""
    from instructeval_tasks.sampling import uniform_indices

    common = dict(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks=None, methods="null",
                  profile="quick", overrides={"test_sample": 4, "test_seed": 3}, data_dir=str(harness_data), device="cpu",
                  progress=False, harness_tasks="hellaswag:0")
    run_sweep(output=tmp_path / "uniform", harness_rows="uniform", **common)
    run_sweep(output=tmp_path / "balanced", **common)
    uniform, balanced = _entries(tmp_path / "uniform"), _entries(tmp_path / "balanced")
    assert uniform["hellaswag__null"]["meta"]["harness"]["test_rows"] == "uniform"
    assert "test_rows" not in balanced["hellaswag__null"]["meta"]["harness"]
    assert _scored_doc_ids(tmp_path / "uniform") == set(uniform_indices(8, 4, 3))
    assert _scored_doc_ids(tmp_path / "balanced") != _scored_doc_ids(tmp_path / "uniform")
    assert len(_scored_doc_ids(tmp_path / "balanced")) == 4


def test_harness_rows_without_harness_tasks_is_refused(tiny_model_dir, tmp_path, capsys):
    from instructeval_tasks import cli

    args = ["run", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir}", "--tasks", "agnews", "--harness-rows",
            "uniform", "--output", str(tmp_path / "o"), "--dry-run"]
    assert cli.main(args) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "instructeval: error: --harness-rows uniform applies to --harness-tasks only (the nine tasks' test sample is "
        "balanced, as the paper's); add --harness-tasks or drop it"]
    assert not (tmp_path / "o").exists()


def test_harness_results_files_record_their_evaluation_time(harness_sweep):
    """As lm_eval's CLI writes it; the verdict's "resolving needs ... (about T)" reads it per cell."""
    out, _ = harness_sweep
    files = sorted(out.rglob("results_*.json"))
    assert files and all(float(json.loads(p.read_text())["total_evaluation_time_seconds"]) > 0 for p in files)
