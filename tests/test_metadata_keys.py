"""Unknown metadata keys and negative seeds are refused; model arguments in the same dict are not.

The harness merges ``--model_args`` into every task's metadata, so the check has to let the model
arguments of every backend through (and the keys of the ``model_args`` actually passed) while a
typo such as ``instrution`` -- which used to evaluate the null instruction with exit code 0 -- is
an error naming the closest known key. Two real ``lm_eval`` processes run side by side: the typo
with ``--model dummy``, and the tiny model with backend and ``from_pretrained`` arguments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from instructeval_tasks.errors import UserError
from instructeval_tasks.model_arg_keys import backend_parameters
from instructeval_tasks.options import DATA_DIR_ENV, RECORD_KEYS, OptionError, TaskOptions, UnknownOptionError
from instructeval_tasks.preview import build_task

REPO_ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}


@pytest.fixture(autouse=True)
def no_data_dir_env(monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)


def _exe(name: str) -> str:
    exe = Path(sys.executable).with_name(name)
    return str(exe) if exe.exists() else name


# ------------------------------------------------------------------------------ unknown keys


@pytest.mark.parametrize(
    "typo,closest",
    [("instrution", "instruction"), ("demoseed", "demo_seed"), ("instruction_indx", "instruction_index"),
     ("Method", "method"), ("data-dir", "data_dir"), ("perturbation_sed", "perturbation_seed")],
)
def test_a_typo_names_the_key_and_the_closest_known_key(typo, closest):
    with pytest.raises(UnknownOptionError) as info:
        TaskOptions.from_metadata({typo: "x"})
    message = str(info.value)
    assert f"metadata key {typo!r} is not an InstructEval option (did you mean {closest!r}?)" in message
    assert isinstance(info.value, UserError) and isinstance(info.value, OptionError)


def test_a_key_close_to_nothing_still_names_the_closest_key():
    with pytest.raises(UnknownOptionError, match=r"metadata key 'zzz' is not an InstructEval option \(the closest known key is '"):
        TaskOptions.from_metadata({"zzz": 1})


def test_every_unknown_key_is_listed():
    with pytest.raises(UnknownOptionError, match=r"also unknown: 'bar'"):
        TaskOptions.from_metadata({"foo": 1, "bar": 2, "instruction": "x"})


def test_the_typo_surfaces_through_task_construction(tiny_data_dir):
    with pytest.raises(UnknownOptionError, match="did you mean 'instruction'"):
        build_task("agnews", {"data_dir": str(tiny_data_dir), "instrution": "Classify the news."}, 0)


@pytest.mark.parametrize(
    "key,value",
    [("pretrained", "gpt2"), ("dtype", "float32"), ("gguf_file", "m.gguf"), ("trust_remote_code", True),
     ("revision", "main"), ("tokenizer", "gpt2"), ("device", "cpu"), ("batch_size", 8), ("max_length", 2048),
     ("parallelize", False), ("softmax_dtype", "float32"), ("add_bos_token", True), ("peft", "adapter"),
     ("base_url", "http://localhost"), ("tensor_parallel_size", 2), ("max_model_len", 4096)],
)
def test_model_arguments_of_the_harness_backends_pass(key, value):
    assert TaskOptions.from_metadata({key: value, "instruction": "x"}).instruction == "x"


def test_backend_parameters_cover_hflm_and_vllm_from_source():
    import inspect

    from lm_eval.models.huggingface import HFLM

    from instructeval_tasks.backend import InstructEvalHFLM

    for cls in (HFLM, InstructEvalHFLM):
        params = {p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "kwargs", "args")}
        assert params <= backend_parameters(), params - backend_parameters()
    assert {"tensor_parallel_size", "max_model_len", "lora_local_path"} <= backend_parameters()  # vLLM, read without vllm


def test_harness_and_record_keys_pass():
    meta = {"version": 1.0, "instructeval_task": "agnews", "config_source": "/x.yaml",
            **{k: "v" for k in RECORD_KEYS}}
    assert TaskOptions.from_metadata(meta) == TaskOptions()


def test_a_forwarded_from_pretrained_argument_passes_only_as_a_model_argument():
    # attn_implementation is no constructor parameter: HFLM forwards it to from_pretrained via
    # **kwargs. Outside an evaluation nothing says it is a model argument.
    with pytest.raises(UnknownOptionError, match="'attn_implementation'"):
        TaskOptions.from_metadata({"attn_implementation": "eager"})


def test_model_args_of_the_running_simple_evaluate_call_pass(monkeypatch, tiny_data_dir):
    """Inside ``simple_evaluate`` the keys of its ``model_args`` (str or dict) are model arguments.

    ``simple_evaluate`` merges ``model_args`` into the metadata of the ``TaskManager`` it builds;
    the manager here parses the options where the real one builds the tasks, then stops.
    """
    import lm_eval.evaluator
    from lm_eval.api.model import LM

    class NoModel(LM):
        rank = 0

        @classmethod
        def create_from_arg_string(cls, arg_string, additional_config=None):
            return cls()

        @classmethod
        def create_from_arg_obj(cls, arg_dict, additional_config=None):
            return cls()

        loglikelihood = loglikelihood_rolling = generate_until = None

    class Stop(Exception):
        pass

    parsed = []

    class OptionsOnlyManager:
        def __init__(self, metadata=None, **kwargs):
            self.metadata = metadata

        def load(self, tasks):
            parsed.append(TaskOptions.from_metadata(self.metadata))
            raise Stop

    monkeypatch.setattr(lm_eval.evaluator, "TaskManager", OptionsOnlyManager)
    monkeypatch.setattr(lm_eval.api.registry, "get_model", lambda name: NoModel)
    for model_args in ("pretrained=x,attn_implementation=eager", {"pretrained": "x", "attn_implementation": "eager"}):
        with pytest.raises(Stop):
            lm_eval.evaluator.simple_evaluate(model="hf", model_args=model_args, tasks=["instructeval_agnews"],
                                              metadata={"data_dir": str(tiny_data_dir)})
        assert parsed.pop().data_dir == str(tiny_data_dir)
    with pytest.raises(UnknownOptionError, match="'instrution'"):
        lm_eval.evaluator.simple_evaluate(model="hf", model_args="pretrained=x", tasks=["instructeval_agnews"],
                                          metadata={"instrution": "x"})


def test_sweep_variants_pass_only_known_keys(tiny_data_dir):
    """Every key ``instructeval run`` writes into a variant's metadata is read or recorded."""
    from instructeval_banks import load_layered_bank

    from instructeval_tasks.options import HARNESS_KEYS
    from instructeval_tasks.sweep.plan import MODEL_ARG_KEYS, build_plan
    from instructeval_tasks.sweep.profiles import get_profile

    profile = get_profile("quick")
    plan = build_plan(["agnews", "nq_open"], ["null", "generic"], profile, load_layered_bank(None))
    options = set(TaskOptions.__dataclass_fields__)
    for variant in plan:
        meta = variant.protocol_metadata(profile, bank_dir=None, data_dir=str(tiny_data_dir))
        assert set(meta) <= options | HARNESS_KEYS | RECORD_KEYS, set(meta) - options - HARNESS_KEYS - RECORD_KEYS
    assert set(MODEL_ARG_KEYS) <= backend_parameters()


# ------------------------------------------------------------------------------ negative seeds


@pytest.mark.parametrize("key", ["demo_seed", "test_seed", "order_seed", "perturbation_seed"])
@pytest.mark.parametrize("value", [-3, "-3"])
def test_negative_seeds_are_refused(key, value):
    with pytest.raises(OptionError) as info:
        TaskOptions.from_metadata({key: value})
    message = str(info.value)
    assert f"metadata {key}=-3: seeds must be >= 0" in message
    assert f"use {key}=3" in message


def test_why_negative_seeds_are_refused():
    # random.Random(-n) is random.Random(n): demo_seed=-3 used to draw the demo set of seed 3
    # while recording -3.
    import random

    assert random.Random(-3).random() == random.Random(3).random()


def test_negative_demo_seed_through_the_task(tiny_data_dir):
    with pytest.raises(OptionError, match="metadata demo_seed=-1: seeds must be >= 0"):
        build_task("agnews", {"data_dir": str(tiny_data_dir), "demo_seed": -1}, 2)
    task = build_task("agnews", {"data_dir": str(tiny_data_dir), "demo_seed": 0}, 2)
    assert task.dump_config()["metadata"]["demo_seed"] == 0


def test_instructeval_prompt_prints_one_line_for_a_typo_and_a_negative_seed(tiny_data_dir):
    for metadata, expected in (({"instrution": "Classify."}, "did you mean 'instruction'?"),
                               ({"demo_seed": -2}, "metadata demo_seed=-2: seeds must be >= 0")):
        done = subprocess.run(
            [_exe("instructeval"), "prompt", "agnews", "--data-dir", str(tiny_data_dir), "--metadata", json.dumps(metadata)],
            cwd=REPO_ROOT, env=ENV, capture_output=True, text=True, timeout=300,
        )
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("instructeval: error: ") and expected in lines[0], done.stderr


# ------------------------------------------------------------------------------ the lm_eval CLI


@pytest.fixture(scope="module")
def lm_eval_runs(tmp_path_factory, tiny_model_dir, tiny_data_dir):
    """Two real ``lm_eval`` processes, started together: the typo, and model arguments that must pass."""
    tmp = tmp_path_factory.mktemp("metadata_cli")
    common = [_exe("lm_eval"), "--include_path", "instructeval_tasks", "--tasks", "instructeval_agnews", "--limit", "2"]
    typo = common + ["--model", "dummy", "--metadata",
                     json.dumps({"instrution": "Classify the news.", "data_dir": str(tiny_data_dir)})]
    model_args = (f"pretrained={tiny_model_dir},dtype=float32,trust_remote_code=False,revision=main,"
                  f"attn_implementation=eager,low_cpu_mem_usage=True")
    passes = common + ["--model", "hf", "--model_args", model_args, "--device", "cpu", "--num_fewshot", "0",
                       "--output_path", str(tmp / "out"), "--metadata",
                       json.dumps({"instruction": "Classify the news.", "data_dir": str(tiny_data_dir)})]
    procs = {}
    for name, args in (("typo", typo), ("passes", passes)):
        log = (tmp / f"{name}.log").open("w")
        procs[name] = (subprocess.Popen(args, cwd=REPO_ROOT, env=ENV, stdout=log, stderr=subprocess.STDOUT), log)
    out = {}
    for name, (proc, log) in procs.items():
        try:
            code = proc.wait(timeout=400)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        log.close()
        out[name] = (code, (tmp / f"{name}.log").read_text(errors="replace"))
    out["results"] = sorted((tmp / "out").rglob("results_*.json"))
    return out


def test_lm_eval_refuses_the_typo(lm_eval_runs):
    code, output = lm_eval_runs["typo"]
    assert code != 0
    assert "UnknownOptionError: metadata key 'instrution' is not an InstructEval option (did you mean 'instruction'?)" in output
    assert "Running loglikelihood requests" not in output  # nothing was evaluated


def test_lm_eval_lets_model_arguments_through(lm_eval_runs):
    code, output = lm_eval_runs["passes"]
    assert code == 0, output[-3000:]
    results = json.loads(lm_eval_runs["results"][0].read_text())
    meta = results["configs"]["instructeval_agnews"]["metadata"]
    assert meta["attn_implementation"] == "eager" and meta["instruction"] == "Classify the news."
    assert meta["method"] == "literal"
    assert "acc_per_token,none" in results["results"]["instructeval_agnews"]
