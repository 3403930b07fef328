"""``instructeval prepare-model``: the hint after the conversion names the dtype this CPU runs faster and
says why; transformers' advice about how the conversion loads the GGUF file is not shown beside it."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pytest


@pytest.mark.parametrize("dtype, why", [
    ("float32", "this CPU has no native bfloat16 arithmetic (no avx512_bf16 or amx_bf16 flag)"),
    ("bfloat16", "this CPU has native bfloat16 arithmetic (the avx512_bf16 or amx_bf16 flag)"),
])
def test_the_hint_says_why_its_dtype(monkeypatch, capsys, tmp_path, dtype, why):
    import instructeval_tasks.models as models
    from instructeval_tasks.commands import prepare_model as command

    monkeypatch.setattr(models, "prepare_model", lambda name, out, install=False: Path(out))
    monkeypatch.setattr(models, "cpu_dtype", lambda: dtype)
    assert command.run(argparse.Namespace(name="smollm2-135m-instruct", out=str(tmp_path / "m"), install=False)) == 0
    hint, reason = capsys.readouterr().out.strip().splitlines()
    assert f",dtype={dtype} " in hint
    assert reason.startswith(f"dtype={dtype}: {why}")
    # on a CPU with native bf16 the README's float32 is still named, with what it gives
    assert ("float32, as in the README" in reason) == (dtype == "bfloat16")


def test_prepare_model_drops_transformers_gguf_load_hint_only(monkeypatch, capsys, caplog, tmp_path):
    """transformers' 'load the GGUF in float32' advice concerns how the conversion reads the file, not
    the dtype to evaluate with: it is dropped during the conversion; other warnings are kept."""
    import instructeval_tasks.models as models
    from instructeval_tasks.commands import prepare_model as command

    gguf_log = logging.getLogger("transformers.quantizers.quantizer_gguf")
    hint = ("Loading a GGUF checkpoint with its weights packed is fastest in float32, and this one was asked "
            "for in torch.bfloat16. Pass `dtype=torch.float32` to avoid it")

    def convert(name, out, install=False):
        gguf_log.warning(hint)
        gguf_log.warning("a GGUF tensor could not be read")
        return Path(out)

    monkeypatch.setattr(models, "prepare_model", convert)
    monkeypatch.setattr(models, "cpu_dtype", lambda: "bfloat16")
    # Earlier tests of the suite may leave this logger disabled (a logging.config.dictConfig call, as
    # Ray's, disables the loggers that exist) or cut off from the root logger caplog listens on
    # (transformers' set-up stops propagation): a fresh `instructeval prepare-model` process has
    # neither, so undo both here and listen on the logger itself.
    monkeypatch.setattr(gguf_log, "disabled", False)
    gguf_log.addHandler(caplog.handler)
    with caplog.at_level(logging.WARNING, logger=gguf_log.name):
        assert command.run(argparse.Namespace(name="smollm2-135m-instruct", out=str(tmp_path / "m"), install=False)) == 0
        messages = [r.getMessage() for r in caplog.records]
        assert "a GGUF tensor could not be read" in messages and hint not in messages
        gguf_log.warning(hint)  # after the conversion the logger is as it was
        assert hint in [r.getMessage() for r in caplog.records]
    gguf_log.removeHandler(caplog.handler)
