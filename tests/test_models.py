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


def test_portable_tokenizer_config_names_a_class_every_supported_transformers_knows(tmp_path):
    import json

    from instructeval_tasks.models import portable_tokenizer_config

    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "TokenizersBackend", "bos_token": "<s>"}))
    portable_tokenizer_config(tmp_path)
    assert json.loads((tmp_path / "tokenizer_config.json").read_text()) == {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>"}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "LlamaTokenizer"}))
    portable_tokenizer_config(tmp_path)  # a class 4.x and 5.x both know: left alone
    assert json.loads((tmp_path / "tokenizer_config.json").read_text()) == {"tokenizer_class": "LlamaTokenizer"}
