"""``instructeval-hf`` is known to lm-eval: on import of the backend, and lazily through the hook.

The hook (``instructeval_tasks.backend.hook``) is what the ``instructeval_harness_lmeval.pth``
line runs at interpreter start-up; it must import neither lm_eval nor torch, must not hide the
stock models, and must make both ``lm_eval --model instructeval-hf`` (here through
``python -m instructeval_tasks.backend.hook``, the CLI with the hook) and ``instructeval run
--model instructeval-hf`` work in a fresh process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}


def _python(code: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=ENV, timeout=timeout)


def test_importing_the_backend_registers_it():
    from lm_eval.api.registry import get_model

    import instructeval_tasks.backend as backend

    assert get_model("instructeval-hf") is backend.InstructEvalHFLM
    assert get_model("hf").__name__ == "HFLM"


def test_hook_is_lazy_and_keeps_the_stock_models():
    done = _python(
        "import sys\n"
        "import instructeval_tasks.backend.hook as h\n"
        "h.install(); h.install()\n"
        "assert not any(m in sys.modules for m in ('torch', 'lm_eval', 'transformers')), 'heavy import at start-up'\n"
        "from lm_eval.api.registry import get_model, model_registry\n"
        "assert model_registry._objs['instructeval-hf'] == 'instructeval_tasks.backend:InstructEvalHFLM'\n"
        "assert 'torch' not in sys.modules\n"
        "assert get_model('hf').__name__ == 'HFLM' and get_model('dummy').__name__ == 'DummyLM'\n"
        "assert get_model('instructeval-hf').__name__ == 'InstructEvalHFLM'\n"
        "import instructeval_tasks.backend  # the decorator upgrades the placeholder without a clash\n"
        "print('ok')\n"
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_hook_registers_at_once_when_the_registry_is_loaded():
    done = _python(
        "import lm_eval.api.registry as r\n"
        "import instructeval_tasks.backend.hook as h\n"
        "h.install()\n"
        "assert r.get_model('instructeval-hf').__name__ == 'InstructEvalHFLM'\n"
        "assert r.get_model('hf').__name__ == 'HFLM'\n"
        "print('ok')\n"
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_build_step_writes_the_pth(tmp_path):
    from setuptools import Distribution

    from instructeval_tasks.backend import build as backend_build

    dist = Distribution({"name": "x", "packages": []})
    cmd = backend_build.build_py(dist)
    cmd.initialize_options()
    cmd.build_lib = str(tmp_path)
    cmd.finalize_options()
    cmd.run()
    pth = tmp_path / backend_build.PTH_NAME
    assert pth.read_text() == backend_build.PTH_LINE
    assert str(pth) in cmd.get_outputs()
    line = backend_build.PTH_LINE.strip()
    assert line.startswith("import ")  # site.py executes .pth lines that start with "import"
    done = _python(line + "\nimport sys\nassert 'lm_eval' not in sys.modules\nprint('ok')")
    assert done.returncode == 0, done.stderr


def test_lm_eval_cli_with_the_hook(tmp_path, tiny_model_dir, tiny_data_dir):
    out = tmp_path / "out"
    meta = {"data_dir": str(tiny_data_dir), "method": "null"}
    cmd = [
        sys.executable, "-m", "instructeval_tasks.backend.hook",
        "--model", "instructeval-hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32",
        "--include_path", str(REPO / "instructeval_tasks"), "--tasks", "instructeval_agnews",
        "--num_fewshot", "2", "--limit", "3", "--device", "cpu", "--batch_size", "4",
        "--metadata", json.dumps(meta), "--output_path", str(out),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=ENV, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(next(out.rglob("results_*.json")).read_text())
    assert result["config"]["model"] == "instructeval-hf"
    assert "acc,none" in result["results"]["instructeval_agnews"]


def test_instructeval_run_with_the_hook(tmp_path, tiny_model_dir, tiny_data_dir):
    code = (
        "import sys\n"
        "import instructeval_tasks.backend.hook as h\n"
        "h.install()\n"
        "from instructeval_tasks.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    args = [
        "run", "--model", "instructeval-hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32",
        "--tasks", "agnews", "--methods", "null", "--output", str(tmp_path / "sweep"), "--data-dir", str(tiny_data_dir),
        "--device", "cpu", "--batch_size", "4", "--test-sample", "3", "--settings", "few_shot", "--selections", "1",
    ]
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO, env=ENV, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert list((tmp_path / "sweep").rglob("results_*.json"))
