"""End to end through the real ``lm_eval`` console script, on the tiny data and the tiny model.

One module-scoped fixture starts, side by side, the two subprocesses every test here reads (the
evaluation of all nine tasks and ``lm_eval validate``; each CLI call spends ~15 s indexing the
harness's built-in tasks) and, while they run, evaluates the same nine tasks again in this process
through ``lm_eval.simple_evaluate`` with another global few-shot seed: the re-run must reproduce
the CLI run's ``task_hashes`` (the harness's hash of every sample's doc, prompt and target).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
TASKS = ["agnews", "anli", "boolq", "imdb", "emotion", "cosmosqa", "hellaswag", "nq_open", "triviaqa"]
CHOICE_TASKS = ["agnews", "anli", "boolq", "imdb", "emotion", "cosmosqa", "hellaswag"]
GQA_TASKS = ["nq_open", "triviaqa"]
# A field of each task's train rows that appears verbatim in a demo (the first text field).
DEMO_FIELD = {
    "agnews": ("ag_news", "text"), "anli": ("anli", "premise"), "boolq": ("boolq", "passage"),
    "imdb": ("imdb", "text"), "emotion": ("tweet_eval_emotion", "text"), "cosmosqa": ("cosmos_qa", "context"),
    "hellaswag": ("hellaswag", "ctx"), "nq_open": ("nq_open", "question"), "triviaqa": ("trivia_qa", "question"),
}
LIMIT = 4
INSTRUCTION = "Complete the problem."  # generic-2


def _lm_eval() -> list[str]:
    exe = Path(sys.executable).with_name("lm_eval")
    return [str(exe)] if exe.exists() else ["lm_eval"]


def _run_args(model_dir: Path, data_dir: Path, out: Path, extra: list[str]) -> list[str]:
    metadata = {"data_dir": str(data_dir), "method": "generic", "instruction_index": 2, "demo_seed": 1}
    return _lm_eval() + [
        "--include_path", "instructeval_tasks",
        "--tasks", "instructeval",
        "--model", "hf",
        "--model_args", f"pretrained={model_dir},dtype=float32",
        "--device", "cpu",
        "--batch_size", "8",
        "--limit", str(LIMIT),
        "--output_path", str(out),
        "--log_samples",
        "--metadata", json.dumps(metadata),
        "--num_fewshot", "2",
    ] + extra


class Run:
    def __init__(self, name: str, args: list[str], log: Path, out: Path | None = None):
        self.name, self.args, self.out, self.log = name, args, out, log
        env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
        self._handle = log.open("w")
        self.proc = subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=self._handle, stderr=subprocess.STDOUT)

    def wait(self) -> "Run":
        try:
            self.returncode = self.proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.returncode = self.proc.wait()
        self._handle.close()
        self.output = self.log.read_text(errors="replace")
        return self

    def check(self) -> "Run":
        assert self.returncode == 0, f"{self.name} failed ({self.returncode}):\n{self.output[-4000:]}"
        return self

    def results(self) -> dict:
        files = sorted(self.out.rglob("results_*.json"))
        assert len(files) == 1, files
        return json.loads(files[0].read_text())

    def samples(self, task: str) -> list[dict]:
        files = sorted(self.out.rglob(f"samples_instructeval_{task}_*.jsonl"))
        assert len(files) == 1, files
        rows = [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]
        return sorted(rows, key=lambda r: r["doc_id"])


def _in_process_rerun(model_dir: Path, data_dir: Path) -> dict:
    """The same evaluation through the Python API, with global few-shot seed 7; task hashes as the CLI's."""
    from lm_eval import simple_evaluate
    from lm_eval.utils import hash_string

    import instructeval_tasks

    metadata = {"pretrained": str(model_dir), "dtype": "float32", "data_dir": str(data_dir), "method": "generic",
                "instruction_index": 2, "demo_seed": 1}
    out = simple_evaluate(
        model="hf",
        model_args={"pretrained": str(model_dir), "dtype": "float32"},
        tasks=["instructeval"],
        task_manager=instructeval_tasks.task_manager(metadata=metadata),
        num_fewshot=2,
        batch_size=8,
        device="cpu",
        limit=LIMIT,
        log_samples=True,
        fewshot_random_seed=7,
    )
    # lm_eval/loggers/evaluation_tracker.py: task_hashes[task] = hash of the joined sample hashes
    out["task_hashes"] = {
        task: hash_string("".join(s["doc_hash"] + s["prompt_hash"] + s["target_hash"] for s in samples))
        for task, samples in out["samples"].items()
    }
    return out


@pytest.fixture(scope="module")
def cli(tmp_path_factory, tiny_model_dir, tiny_data_dir):
    tmp = tmp_path_factory.mktemp("cli")
    first = Run("lm_eval run", _run_args(tiny_model_dir, tiny_data_dir, tmp / "out1", []), tmp / "run1.log", tmp / "out1")
    validate = Run(
        "lm_eval validate",
        _lm_eval() + ["validate", "--include_path", "instructeval_tasks", "--tasks", "instructeval,instructeval_cls,instructeval_agnews"],
        tmp / "validate.log",
    )
    try:
        again = _in_process_rerun(tiny_model_dir, tiny_data_dir)
    finally:
        first.wait()
        validate.wait()
    return {"first": first, "again": again, "validate": validate}


@pytest.fixture(scope="module")
def run(cli) -> Run:
    return cli["first"].check()


@pytest.fixture(scope="module")
def results(run) -> dict:
    return run.results()


def test_results_hold_all_nine_tasks(results):
    assert set(results["results"]) == {f"instructeval_{t}" for t in TASKS}
    assert set(results["configs"]) == {f"instructeval_{t}" for t in TASKS}
    for task in TASKS:
        name = f"instructeval_{task}"
        assert results["n-shot"][name] == 2
        assert results["n-samples"][name]["effective"] == LIMIT
        assert results["n-samples"][name]["original"] == 8


@pytest.mark.parametrize("task", CHOICE_TASKS)
def test_choice_tasks_report_three_accuracies(results, task):
    scores = results["results"][f"instructeval_{task}"]
    for metric in ("acc", "acc_norm", "acc_per_token"):
        value = scores[f"{metric},none"]
        assert 0.0 <= value <= 1.0
        assert value * LIMIT == pytest.approx(round(value * LIMIT))
        assert f"{metric}_stderr,none" in scores
    assert "quasi_exact_match,none" not in scores
    assert results["higher_is_better"][f"instructeval_{task}"] == {"acc": True, "acc_norm": True, "acc_per_token": True}


@pytest.mark.parametrize("task", GQA_TASKS)
def test_gqa_tasks_report_quasi_exact_match(results, task):
    scores = results["results"][f"instructeval_{task}"]
    assert 0.0 <= scores["quasi_exact_match,none"] <= 1.0
    assert not any(k.startswith("acc") for k in scores)


@pytest.mark.parametrize("task", TASKS)
def test_config_metadata_records_the_variant(run, results, task, tiny_data_dir, tiny_model_dir):
    config = results["configs"][f"instructeval_{task}"]
    meta = config["metadata"]
    assert meta["method"] == "generic"
    assert meta["instruction_id"] == "generic-2"
    assert meta["instruction_index"] == 2
    assert meta["instruction_text"] == INSTRUCTION
    assert meta["instruction_sha"] == __import__("hashlib").sha256(INSTRUCTION.encode()).hexdigest()[:16]
    assert meta["demo_seed"] == 1
    assert meta["num_fewshot"] == 2
    assert len(meta["demo_ids"]) == 2 and all(0 <= i < 12 for i in meta["demo_ids"])
    assert meta["data_source"] == str(Path(tiny_data_dir).resolve() / DEMO_FIELD[task][0])
    assert meta["pretrained"] == str(tiny_model_dir)  # model_args are merged in
    assert config["num_fewshot"] == 2
    assert config["description"] == INSTRUCTION + "\n\n"
    if task in CHOICE_TASKS:
        assert meta["score_tokenizer"] == str(tiny_model_dir)
    counts = meta["choice_token_counts"]
    if task in ("agnews", "imdb", "boolq", "anli", "emotion"):  # fixed labels: each label's per-token divisor
        request = run.samples(task)[0]["arguments"]
        assert sorted(counts) == sorted(a["arg_1"] for a in request.values())
    else:
        assert counts is None


@pytest.mark.parametrize("task", TASKS)
def test_samples_share_one_demo_set(run, results, tiny_rows, task):
    samples = run.samples(task)
    assert [s["doc_id"] for s in samples] == list(range(LIMIT))
    local_dir, field = DEMO_FIELD[task]
    train, evaluation = tiny_rows[local_dir]["train"], tiny_rows[local_dir]["eval"]
    demo_ids = results["configs"][f"instructeval_{task}"]["metadata"]["demo_ids"]
    demo_prefixes = set()
    for sample in samples:
        prompt = sample["arguments"]["gen_args_0"]["arg_0"]
        assert prompt.startswith(INSTRUCTION + "\n\n")
        # every choice of a doc is scored after the same context
        assert {a["arg_0"] for a in sample["arguments"].values()} == {prompt}
        test_text = evaluation[sample["doc_id"]][field]
        cut = prompt.rindex(test_text)
        demo_prefixes.add(prompt[:cut])
        positions = [prompt.index(train[i][field]) for i in demo_ids]
        assert positions == sorted(positions)  # demos in demo_ids order
        assert prompt.count("\n\n") == 3  # instruction + two demos, each followed by the delimiter
    assert len(demo_prefixes) == 1


@pytest.mark.parametrize("task", CHOICE_TASKS)
def test_choice_samples(run, task):
    for sample in run.samples(task):
        continuations = [a["arg_1"] for a in sample["arguments"].values()]
        assert all(c.startswith(" ") for c in continuations)
        assert sample["arguments"]["gen_args_0"]["arg_0"].endswith(":")
        assert {"acc", "acc_norm", "acc_per_token"} <= set(sample)
    if task == "agnews":
        assert continuations == [" World", " Sports", " Business", " Sci/Tech"]


@pytest.mark.parametrize("task", GQA_TASKS)
def test_generation_samples(run, task):
    for sample in run.samples(task):
        prompt, gen_kwargs = sample["arguments"]["gen_args_0"]["arg_0"], sample["arguments"]["gen_args_0"]["arg_1"]
        assert prompt.endswith("\nAnswer:")
        assert gen_kwargs["until"][0] == "\n" and gen_kwargs["max_gen_toks"] == 10
        assert "\n" not in sample["filtered_resps"][0]
        assert sample["quasi_exact_match"] in (0.0, 1.0)


def test_rerun_gives_the_same_task_hashes(cli, results):
    again = cli["again"]
    assert again["config"]["fewshot_seed"] == 7 and results["config"]["fewshot_seed"] != 7
    assert set(results["task_hashes"]) == {f"instructeval_{t}" for t in TASKS}
    assert all(results["task_hashes"].values())
    assert again["task_hashes"] == results["task_hashes"]
    for task in TASKS:
        name = f"instructeval_{task}"
        assert again["configs"][name]["metadata"]["demo_ids"] == results["configs"][name]["metadata"]["demo_ids"]
        for metric, value in results["results"][name].items():
            if metric != "alias" and not metric.endswith("_stderr,none"):
                assert again["results"][name][metric] == pytest.approx(value), (name, metric)


def test_validate_exits_zero(cli):
    validate = cli["validate"]
    assert validate.returncode == 0, validate.output[-3000:]
    assert "All tasks found" in validate.output


@pytest.mark.parametrize(
    "tag,members",
    [
        ("instructeval", TASKS),
        ("instructeval_cls", ["agnews", "anli", "boolq", "imdb", "emotion"]),
        ("instructeval_mcq", ["cosmosqa", "hellaswag"]),
        ("instructeval_gqa", ["nq_open", "triviaqa"]),
    ],
)
def test_tags(tiny_data_dir, tag, members):
    import instructeval_tasks

    tm = instructeval_tasks.task_manager(metadata={"data_dir": str(tiny_data_dir)})
    assert tag in tm.all_tags
    loaded = tm.load([tag])
    assert set(loaded["tasks"]) == {f"instructeval_{m}" for m in members}
