"""Which path serves ``instructeval-hf``'s requests, on the installed transformers, said out loud.

- The three architectures of the real models (Llama: SmolLM2; Gemma 3; Qwen2) take the prefix path
  on the installed transformers, with the stock scores: no request runs on the stock code.
- A model the prefix path cannot serve is announced when the backend is built (not in the middle of
  the progress output), its requests are counted and their reason recorded in the results'
  ``config.instructeval_hf``, the final summary line says "N of M requests ran on the stock path",
  and ``require_prefix=true`` turns all of that into an error.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from lm_eval.api.instance import Instance

TOL = 1e-4
DEMOS = "News: Ceasefire talks resume in Geneva.\nCategory: World\n\nNews: Home side wins the cup final.\nCategory: Sports\n\n"


def request_args() -> list[tuple[str, str]]:
    """Two instructions x two docs x four choices over shared few-shot prefixes, and two short ones."""
    reqs = [(f"{instruction}{DEMOS}News: {doc}\nCategory:", choice)
            for instruction in ("Solve the following task:\n\n", "Find the answer below:\n\n")
            for doc in ("Fears for pension after talks.", "Robot learns to fold laundry.")
            for choice in (" World", " Sports", " Business", " Sci/Tech")]
    return reqs + [("hello wor", "ld hello world"), ("Category:", " World")]


def instances(args: list[tuple[str, str]]) -> list[Instance]:
    return [Instance("loglikelihood", {}, a, i) for i, a in enumerate(args)]


@pytest.fixture(scope="module")
def arch_dirs(tiny_llama_dirs, tiny_arch_dirs) -> dict[str, Path]:
    return {"llama": tiny_llama_dirs["llama-nobos"], **tiny_arch_dirs}


@pytest.mark.parametrize("arch,model_type", [("llama", "llama"), ("gemma3", "gemma3_text"), ("qwen2", "qwen2")])
def test_real_architectures_take_the_prefix_path(arch_dirs, arch, model_type, caplog):
    from lm_eval.models.huggingface import HFLM

    from instructeval_tasks.backend import InstructEvalHFLM

    args = dict(pretrained=str(arch_dirs[arch]), dtype="float32", device="cpu", batch_size=4, max_length=64)
    with caplog.at_level(logging.WARNING):
        new = InstructEvalHFLM(**args)
    assert new.model.config.model_type == model_type
    assert not [r for r in caplog.records if "stock hf code" in r.getMessage()], "a fallback was announced"
    assert new._ie_unsupported(64) is None
    reqs = instances(request_args())
    got = new.loglikelihood(reqs)
    want = HFLM(**args).loglikelihood(reqs)
    assert max(abs(a[0] - b[0]) for a, b in zip(want, got)) <= TOL
    info = new.get_model_info()["instructeval_hf"]
    assert info["stock_requests"] == 0 and info["prefix_requests"] == len(reqs), info
    assert new.path_summary() is None


def _without_cache_argument(model):
    """``model`` with a forward that names no KV cache argument (as custom model code may)."""
    inner = model.forward

    def forward(input_ids=None, attention_mask=None, **kwargs):
        return inner(input_ids=input_ids, attention_mask=attention_mask, **kwargs)

    model.forward = forward
    return model


def _no_cache_model(model_dir: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype="float32")
    return _without_cache_argument(model.eval()), AutoTokenizer.from_pretrained(model_dir)


def test_a_fallback_is_announced_counted_recorded_and_summarised(arch_dirs, caplog):
    from lm_eval.models.huggingface import HFLM

    from instructeval_tasks.backend import InstructEvalHFLM

    model, tokenizer = _no_cache_model(arch_dirs["llama"])
    with caplog.at_level(logging.WARNING):
        new = InstructEvalHFLM(pretrained=model, tokenizer=tokenizer, device="cpu", batch_size=4, max_length=64)
    start = [r.getMessage() for r in caplog.records if "cannot serve this model" in r.getMessage()]
    assert start and "takes no cache/past_key_values, position_ids" in start[0] and "require_prefix" in start[0], start
    reqs = instances(request_args())
    got = new.loglikelihood(reqs)
    want = HFLM(pretrained=str(arch_dirs["llama"]), dtype="float32", device="cpu", batch_size=4,
                max_length=64).loglikelihood(reqs)
    assert max(abs(a[0] - b[0]) for a, b in zip(want, got)) <= TOL  # same scores, stock code
    assert new.path_summary() == (f"{len(reqs)} of {len(reqs)} requests ran on the stock path: loglikelihood request: "
                                  f"the model's forward takes no cache/past_key_values, position_ids ({len(reqs)})")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        info = new.get_model_info()["instructeval_hf"]
    assert info["stock_requests"] == len(reqs) and info["prefix_requests"] == 0
    assert list(info["stock_reasons"]) == ["loglikelihood request: the model's forward takes no cache/past_key_values, position_ids"]
    assert any("requests ran on the stock path" in r.getMessage() for r in caplog.records)
    assert new.get_model_info()["instructeval_hf"]["stock_requests"] == 0  # counts are per evaluation


def test_require_prefix_makes_a_fallback_an_error(arch_dirs, make_pair):
    from instructeval_tasks.backend import InstructEvalHFLM
    from instructeval_tasks.backend.model import PrefixPathUnavailable
    from instructeval_tasks.errors import UserError

    model, tokenizer = _no_cache_model(arch_dirs["llama"])
    with pytest.raises(PrefixPathUnavailable, match="cannot serve this model .*require_prefix=true makes this an error"):
        InstructEvalHFLM(pretrained=model, tokenizer=tokenizer, device="cpu", batch_size=4, require_prefix="true")
    with pytest.raises(UserError, match="require_prefix=true contradicts prefix_sharing=false"):
        InstructEvalHFLM(pretrained=str(arch_dirs["llama"]), device="cpu", require_prefix=True, prefix_sharing=False)

    ok = InstructEvalHFLM(pretrained=str(arch_dirs["llama"]), dtype="float32", device="cpu", batch_size=4,
                          max_length=64, require_prefix="true")
    assert len(ok.loglikelihood(instances(request_args()[:8]))) == 8  # served: no error
    rolling = [Instance("loglikelihood_rolling", {}, ("hello world " * 20,), 0)]
    with pytest.raises(PrefixPathUnavailable, match="loglikelihood_rolling"):
        ok.loglikelihood_rolling(rolling)  # rolling windows share no prefix: always the stock code


def test_rolling_requests_are_counted_on_the_stock_path(make_pair):
    pair = make_pair("gpt2", batch_size=2, max_length=64)
    pair.new.get_model_info()  # start the counts afresh
    texts = [Instance("loglikelihood_rolling", {}, ("hello world " * 20,), 0)]
    pair.new.loglikelihood_rolling(texts)
    info = pair.new.get_model_info()["instructeval_hf"]
    assert info["prefix_requests"] == 0 and info["stock_requests"] >= 1
    assert all(why.startswith("loglikelihood_rolling window: loglikelihood_rolling") for why in info["stock_reasons"])


def test_a_5x_config_whose_rope_base_4x_misreads_is_refused(tiny_llama_dirs, tmp_path):
    """On transformers 4.x, a config.json written by 5.x (``rope_parameters`` only) would silently run
    with 4.x's default RoPE base; instructeval-hf refuses it, naming the file and the fix."""
    import json
    import shutil

    import transformers

    if int(transformers.__version__.split(".")[0]) >= 5:
        pytest.skip("transformers 5.x reads rope_parameters itself (this guard is for 4.x)")
    from instructeval_tasks.backend import InstructEvalHFLM
    from instructeval_tasks.errors import UserError

    folder = tmp_path / "written_by_5x"
    shutil.copytree(tiny_llama_dirs["llama-nobos"], folder)
    config = json.loads((folder / "config.json").read_text())
    config.pop("rope_theta", None)
    config["rope_parameters"] = {"rope_theta": 500000.0, "rope_type": "default"}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(UserError, match=r"written by transformers 5\.x: its RoPE base \(rope_parameters\.rope_theta=500000\.0\)"):
        InstructEvalHFLM(pretrained=str(folder), dtype="float32", device="cpu", batch_size=2)
    config["rope_theta"] = 500000.0  # what prepare-model writes: both keys
    (folder / "config.json").write_text(json.dumps(config))
    InstructEvalHFLM(pretrained=str(folder), dtype="float32", device="cpu", batch_size=2)
