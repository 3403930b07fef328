"""The README's commands work as written: offline data, one model folder, ignored outputs, matching hints."""

from __future__ import annotations

import argparse
import fnmatch
import json
import logging
import re
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def code_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README, flags=re.DOTALL)


def commands() -> list[list[str]]:
    """Every command of the README's bash blocks, split into words (``&&`` chains and ``\\`` lines joined)."""
    out = []
    for block in code_blocks():
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            for part in line.split("&&"):
                if part.strip():
                    out.append(shlex.split(part))
    return out


def on_a_cluster(words: list[str]) -> bool:
    """A scale-out example (Ray cluster, job-array shard): it names the cluster's shared paths."""
    return option(words, "--ray-address", "--shard") is not None


def option(words: list[str], *names: str) -> str | None:
    for i, word in enumerate(words[:-1]):
        if word in names:
            return words[i + 1]
    return None


def first_command() -> list[list[str]]:
    return [shlex.split(part) for part in code_blocks()[0].strip().split("&&")]


def test_first_command_scores_the_paper_test_sample_offline():
    steps = first_command()
    assert [s[0] for s in steps] == ["pip", "instructeval", "lm_eval"]
    lm_eval = steps[2]
    metadata = json.loads(option(lm_eval, "--metadata"))
    assert metadata == {"data_dir": "../shared/data", "test_sample": 100}
    assert "python -m pytest -q" in code_blocks()[1]  # the second command runs the tests


def test_prepare_model_hint_is_the_readme_next_command(monkeypatch, capsys):
    """The hint names the backend, dtype and model folder of the README's lm_eval step."""
    import instructeval_tasks.models as models
    from instructeval_tasks.commands import prepare_model as command

    prepare, lm_eval = first_command()[1], first_command()[2]
    folder = option(prepare, "--out")
    monkeypatch.setattr(models, "prepare_model", lambda name, out, install=False: Path(out).resolve())
    monkeypatch.setattr(models, "cpu_dtype", lambda: "float32")
    monkeypatch.chdir(REPO)
    assert command.run(argparse.Namespace(name=prepare[2], out=folder, install=True)) == 0
    hint = shlex.split(capsys.readouterr().out.split("ready:", 1)[1].replace("...", ""))
    for name in ("--include_path", "--tasks", "--model", "--model_args", "--device", "--batch_size"):
        assert option(hint, name) == option(lm_eval, name), name
    assert option(lm_eval, "--model_args") == f"pretrained={folder},dtype=float32"


def test_every_example_reads_local_data():
    """Commands that read a dataset say where (``data_dir`` / ``--data-dir``): they run offline as written."""
    checked = 0
    for words in commands():
        if words[0] == "lm_eval" and "validate" not in words:
            assert "data_dir" in json.loads(option(words, "--metadata") or "{}"), words
        elif words[:2] in (["instructeval", "run"], ["instructeval", "induce"]):
            if on_a_cluster(words):
                assert Path(option(words, "--data-dir")).is_absolute(), words  # the same path on every node
                continue
            assert option(words, "--data-dir") == "../shared/data", words
        else:
            continue
        checked += 1
    assert checked >= 6


def test_outputs_are_ignored_and_one_model_folder_is_used():
    ignored = [line.strip().strip("/") for line in (REPO / ".gitignore").read_text().splitlines() if line.strip() and not line.startswith("#")]
    outputs = set()
    models = set()
    for words in commands() + [shlex.split(m) for m in re.findall(r"`((?:instructeval|lm_eval) [^`]+)`", README)]:
        if on_a_cluster(words):  # shared cluster paths, not folders of this clone
            continue
        for name in ("--out", "--output", "--output_path"):
            value = option(words, name)
            if value and not value.startswith(("DIR", "<")):
                outputs.add(value.strip("/").split("/")[0])
        args = option(words, "--model_args") or ""
        models |= set(re.findall(r"pretrained=([^,\s]+)", args))
    assert {"out", "runs", "report", "banks", "models"} <= outputs
    for folder in outputs:
        assert any(fnmatch.fnmatch(folder, pattern) for pattern in ignored), f"{folder}/ is not in .gitignore"
    assert models == {"models/smollm2"}
    for script in (REPO / "benchmarks").glob("*.py"):
        assert "models/smollm2-135m-instruct" not in script.read_text() and '"smollm2-135m-instruct"' not in script.read_text(), script
    assert "lm_eval validate --tasks instructeval --include_path instructeval_tasks" in README
    assert "../shared/reference/upstream_banks" in README and ".../upstream_banks" not in README
    assert "PROMPTSOURCE_SDIST" in README and "skip" in README


def test_prompt_preview_prints_no_scoring_warning(tiny_data_dir, caplog):
    from instructeval_tasks.preview import build_task

    with caplog.at_level(logging.WARNING):
        build_task("agnews", {"data_dir": str(tiny_data_dir)}, 0)
    assert not [r for r in caplog.records if "is not reported" in r.getMessage()]
    # the warning itself is still there for real evaluations (it is filtered for the preview only)
    task_logger = logging.getLogger("instructeval_tasks.task")
    assert not task_logger.filters
