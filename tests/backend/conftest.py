"""Fixtures of the ``instructeval-hf`` backend tests: tiny offline models and stock/new LM pairs.

The tiny GPT-2 (byte-level BPE, BOS = EOS, never added) comes from the shared ``tiny_model_dir``
fixture of ``tests/conftest.py``. Here we add 2-layer Llama, Gemma 3 and Qwen2 models (``build_tiny_lm``): two Llamas sharing random weights,
with a SentencePiece-style tokenizer (``▁`` word boundaries, prefixed to the first word only),
one that adds ``<s>`` to every encoding (as Llama-2 / Gemma tokenizers do) and one that adds none
(as SmolLM2 / Qwen do).
"""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = [
    "Solve the following task:", "Find the answer below:", "Complete the problem.",
    "News: Ceasefire talks resume in Geneva.", "Category: World", "Category: Sports", "Category: Business",
    "Category: Sci/Tech", "Home side wins the cup final.", "Oil prices climb on supply fears.",
    "New chip doubles battery life.", "Fears for pension after talks.", "Goalkeeper saves late penalty.",
    "Robot learns to fold laundry.", "Markets rally on jobs data.", "The quick brown fox jumps over the lazy dog.",
    "hello world", "Question: Who wrote Macbeth? Answer: Shakespeare", "Answer: yes no maybe",
]


def _tiny_tokenizer(*, bos: bool):
    """A Metaspace BPE tokenizer trained on ``CORPUS``; with ``bos``, ``<s>`` starts every encoding."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "<s>", "</s>"]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    bpe.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first")
    alphabet = sorted({c for line in CORPUS for c in line.replace(" ", "▁")} | set("▁abcdefghijklmnopqrstuvwxyz.:?/\n"))
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials, initial_alphabet=alphabet, show_progress=False)
    bpe.train_from_iterator(CORPUS * 5, trainer=trainer)
    if bos:
        bpe.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bpe.token_to_id("<s>"))]
        )
    return PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def build_tiny_lm(out_dir: Path, arch: str = "llama", *, bos: bool = False, window: int = 128) -> Path:
    """A 2-layer causal LM of ``arch`` (``llama``, ``gemma3`` or ``qwen2``: GQA, RoPE; random weights,
    seed 0) with the tiny Metaspace tokenizer. Gemma 3 gets its mix of sliding and full attention
    layers, with a ``window`` longer than the test sequences unless a test asks for a short one."""
    import torch

    tokenizer = _tiny_tokenizer(bos=bos)
    common = dict(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    if arch == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        config, model_class = LlamaConfig(**common), LlamaForCausalLM
    elif arch == "gemma3":
        from transformers import Gemma3ForCausalLM, Gemma3TextConfig

        config = Gemma3TextConfig(**common, head_dim=16, sliding_window=window, layer_types=["sliding_attention", "full_attention"])
        model_class = Gemma3ForCausalLM
    elif arch == "qwen2":
        from transformers import Qwen2Config, Qwen2ForCausalLM

        config, model_class = Qwen2Config(**common), Qwen2ForCausalLM
    else:
        raise ValueError(f"no tiny {arch!r}; known: llama, gemma3, qwen2")
    torch.manual_seed(0)
    model = model_class(config)
    model.eval()
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


@pytest.fixture(scope="session")
def tiny_llama_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny_llama")
    return {
        "llama-bos": build_tiny_lm(root / "bos", bos=True),
        "llama-nobos": build_tiny_lm(root / "nobos", bos=False),
    }


@pytest.fixture(scope="session")
def tiny_arch_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny Gemma 3 and Qwen2 models (the real small models' other architectures), no BOS."""
    root = tmp_path_factory.mktemp("tiny_arch")
    return {arch: build_tiny_lm(root / arch, arch) for arch in ("gemma3", "qwen2")}


@pytest.fixture(scope="session")
def tiny_windowed_gemma_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Gemma 3 whose sliding layer sees 16 tokens: test requests cross its window."""
    return build_tiny_lm(tmp_path_factory.mktemp("tiny_windowed") / "gemma3", "gemma3", window=16)


@pytest.fixture(scope="session")
def model_dirs(tiny_model_dir: Path, tiny_llama_dirs: dict[str, Path]) -> dict[str, Path]:
    return {"gpt2": tiny_model_dir, **tiny_llama_dirs}


class Pair:
    """A stock ``HFLM`` and an ``InstructEvalHFLM`` built with identical model_args."""

    def __init__(self, model_dir: Path, **kwargs) -> None:
        from lm_eval.models.huggingface import HFLM

        from instructeval_tasks.backend import InstructEvalHFLM

        # the new backend's own model_args go to it alone
        own = {k: kwargs.pop(k) for k in ("prefix_sharing", "pack_tokens", "decode_batch_size", "prefix_cache_memory")
               if k in kwargs}
        args = dict(pretrained=str(model_dir), dtype="float32", device="cpu", **kwargs)
        self.stock = HFLM(**args)
        self.new = InstructEvalHFLM(**args, **own)


@pytest.fixture(scope="session")
def make_pair(model_dirs):
    cache: dict[tuple, Pair] = {}

    def make(name: str, **kwargs) -> Pair:
        key = (name, tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = Pair(model_dirs[name], **kwargs)
        return cache[key]

    return make
