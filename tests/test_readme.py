"""The commands of the README and of the guides in ``docs/`` work as written: every option exists,
offline data, one model folder, ignored outputs, the quick start's steps, matching hints."""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import importlib.util
import io
import json
import logging
import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
# Records of past studies: their commands reproduce one run as it was made (shell variables such as
# $common, their own output folders) and are kept as run, not offered as examples to copy.
RECORDS = ("harness_study", "ni_study")


def doc_pages() -> dict[str, str]:
    """The README, the aggregation package's pointer and every guide of ``docs/``, by path from the
    repository's root."""
    pages = {"README.md": README, "aggregation/README.md": (REPO / "aggregation" / "README.md").read_text(encoding="utf-8")}
    for path in sorted((REPO / "docs").rglob("*.md")):
        if path.relative_to(REPO / "docs").parts[0] not in RECORDS:
            pages[path.relative_to(REPO).as_posix()] = path.read_text(encoding="utf-8")
    return pages


PAGES = doc_pages()


def code_blocks(text: str = README) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)


def block_commands(block: str) -> list[list[str]]:
    """The commands of one bash block, split into words (``&&`` chains and ``\\`` lines joined,
    comments dropped)."""
    out = []
    for line in block.replace("\\\n", " ").splitlines():
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if words:
                out.append(words)
    return out


def commands(text: str = README) -> list[list[str]]:
    """Every command of a page's bash blocks."""
    return [words for block in code_blocks(text) for words in block_commands(block)]


def all_commands() -> list[tuple[str, list[str]]]:
    return [(page, words) for page, text in PAGES.items() for words in commands(text)]


def inline_commands() -> list[list[str]]:
    """``instructeval ...`` and ``lm_eval ...`` commands quoted in the pages' prose."""
    found = []
    for text in PAGES.values():
        found += [shlex.split(m) for m in re.findall(r"`((?:instructeval|lm_eval) [^`]+)`", text)]
    return found


def on_a_cluster(words: list[str]) -> bool:
    """A scale-out example (Ray cluster, job-array shard): it names the cluster's shared paths."""
    return option(words, "--ray-address", "--shard") is not None


def option(words: list[str], *names: str) -> str | None:
    for i, word in enumerate(words[:-1]):
        if word in names:
            return words[i + 1]
    return None


# ---------------------------------------------------------------------------------------------
# The quick start


def quick_start() -> tuple[list[list[str]], list[list[str]], list[list[str]]]:
    """The README's first three bash blocks: set-up, the first command, the test command."""
    setup, first, tests = code_blocks()[:3]
    return block_commands(setup), block_commands(first), block_commands(tests)


def first_command() -> list[list[str]]:
    return quick_start()[1]


def test_quick_start_sets_up_a_virtual_environment_in_the_clone():
    setup, _, _ = quick_start()
    assert setup[0][0] == "cd", "the quick start begins in the clone's root"
    assert setup[1][:3] == ["python3", "-m", "venv"] and setup[2] == [".", f"{setup[1][3]}/bin/activate"]
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert f"{setup[1][3]}/" in ignored  # the environment folder is not committed by accident


def test_first_command_is_three_plain_lines():
    """One command per line (no ``&&`` chain, no continuation), so a failing step is the line it is on."""
    block = code_blocks()[1]
    assert "&&" not in block and "\\\n" not in block
    assert [line.split()[0] for line in block.strip().splitlines()] == ["pip", "instructeval", "lm_eval"]


def test_first_command_scores_the_paper_test_sample_offline():
    steps = first_command()
    assert [s[0] for s in steps] == ["pip", "instructeval", "lm_eval"]
    lm_eval = steps[2]
    metadata = json.loads(option(lm_eval, "--metadata"))
    assert metadata == {"data_dir": "../shared/data", "test_sample": 100}
    _, _, tests = quick_start()
    assert ["python", "-m", "pytest", "-q"] in tests  # the third block runs the tests
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "python -m pytest -q" in script and '-e "$root[test,ray]"' in script  # CI runs that command
    assert tests[0][-2:] == ["-e", ".[test,ray]"]


def test_quick_start_states_the_costs_a_newcomer_plans_for():
    """How long the whole test suite runs and how much memory the first command needs, in numbers."""
    assert re.search(r"whole suite takes about \d+ minutes", README)
    assert re.search(r"peak memory is the `lm_eval` step's, about [\d.-]+ GB", README)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_prepare_model_hint_is_the_readme_next_command(monkeypatch, capsys, dtype):
    """The hint names the backend, model folder and options of the README's lm_eval step, and the
    dtype this CPU runs faster, saying why (the README keeps float32, which every CPU runs)."""
    import instructeval_tasks.models as models
    from instructeval_tasks.commands import prepare_model as command

    prepare, lm_eval = first_command()[1], first_command()[2]
    folder = option(prepare, "--out")
    monkeypatch.setattr(models, "prepare_model", lambda name, out, install=False: Path(out).resolve())
    monkeypatch.setattr(models, "cpu_dtype", lambda: dtype)
    monkeypatch.chdir(REPO)
    assert command.run(argparse.Namespace(name=prepare[2], out=folder, install=True)) == 0
    hint_line, reason = capsys.readouterr().out.split("ready:", 1)[1].strip().splitlines()
    hint = shlex.split(hint_line.replace("...", ""))
    for name in ("--include_path", "--tasks", "--model", "--device", "--batch_size"):
        assert option(hint, name) == option(lm_eval, name), name
    assert option(lm_eval, "--model_args") == f"pretrained={folder},dtype=float32"
    assert option(hint, "--model_args") == f"pretrained={folder},dtype={dtype}"
    assert reason.startswith(f"dtype={dtype}: this CPU has ")
    assert ("no native bfloat16" in reason) == (dtype == "float32")
    if dtype == "bfloat16":  # the README's float32 still named, and why one might keep it
        assert "float32, as in the README" in reason


# ---------------------------------------------------------------------------------------------
# Every command of every page


def _parse_instructeval(words: list[str]) -> None:
    from instructeval_tasks.cli import _join_dash_values, build_parser

    build_parser().parse_args(_join_dash_values(words[1:]))


def _parse_lm_eval(words: list[str], monkeypatch) -> None:
    from lm_eval._cli import HarnessCLI  # the parser of the installed lm_eval command

    monkeypatch.setattr(sys, "argv", ["lm_eval", *words[1:]])
    HarnessCLI().parse_args()


def _extras() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return set(project["optional-dependencies"])


def check_command(page: str, words: list[str], monkeypatch) -> None:
    """One documented command: its program is one this project documents, its options exist."""
    program = words[0]
    if program in ("instructeval", "lm_eval"):
        stderr = io.StringIO()
        try:
            with contextlib.redirect_stderr(stderr):
                (_parse_instructeval(words) if program == "instructeval" else _parse_lm_eval(words, monkeypatch))
        except SystemExit:
            pytest.fail(f"{page}: {shlex.join(words)}\n{stderr.getvalue().strip()}")
    elif program == "pip":
        for word in words:
            if word.startswith((".[", "-e .[")) or re.fullmatch(r"\.\[[\w,]+\]", word):
                assert set(word.split("[", 1)[1].rstrip("]").split(",")) <= _extras(), (page, words)
    elif program in ("python", "python3"):
        if words[1] == "-m":
            assert importlib.util.find_spec(words[2]) is not None, (page, words)
        else:
            assert (REPO / words[1]).is_file(), (page, words)
    elif program == "cd":
        assert page == "README.md", f"{page}: commands run from the clone's root, no cd: {words}"
    else:
        assert program in (".", "export", "ray"), f"{page}: no check for the program of {shlex.join(words)}"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_command_of_the_page_parses(page, monkeypatch):
    for words in commands(PAGES[page]):
        check_command(page, words, monkeypatch)


def test_the_command_check_catches_an_unknown_option(monkeypatch):
    with pytest.raises(pytest.fail.Exception, match="--no-such-option"):
        check_command("x.md", ["instructeval", "run", "--model", "hf", "--no-such-option"], monkeypatch)
    with pytest.raises(pytest.fail.Exception, match="unrecognized arguments: --bogus"):
        check_command("x.md", ["lm_eval", "--tasks", "instructeval_agnews", "--bogus"], monkeypatch)


def test_every_example_reads_local_data():
    """Commands that read a dataset say where (``data_dir`` / ``--data-dir``): they run offline as written."""
    checked = 0
    for page, words in all_commands():
        if words[0] == "lm_eval" and "validate" not in words:
            assert "data_dir" in json.loads(option(words, "--metadata") or "{}"), (page, words)
        elif words[:2] in (["instructeval", "run"], ["instructeval", "induce"]):
            if on_a_cluster(words):
                assert Path(option(words, "--data-dir")).is_absolute(), (page, words)  # the same path on every node
                continue
            assert option(words, "--data-dir") == "../shared/data", (page, words)
        else:
            continue
        checked += 1
    assert checked >= 6


def test_outputs_are_ignored_and_one_model_folder_is_used():
    ignored = [line.strip().strip("/") for line in (REPO / ".gitignore").read_text().splitlines() if line.strip() and not line.startswith("#")]
    outputs = set()
    models = set()
    for words in [w for _, w in all_commands()] + inline_commands():
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
    text = "\n".join(PAGES.values())
    assert "lm_eval validate --tasks instructeval --include_path instructeval_tasks" in text
    assert "../shared/reference/upstream_banks" in text and ".../upstream_banks" not in text
    assert "PROMPTSOURCE_SDIST" in text and "skip" in text


def test_prompt_preview_prints_no_scoring_warning(tiny_data_dir, caplog):
    from instructeval_tasks.preview import build_task

    with caplog.at_level(logging.WARNING):
        build_task("agnews", {"data_dir": str(tiny_data_dir)}, 0)
    assert not [r for r in caplog.records if "is not reported" in r.getMessage()]
    # the warning itself is still there for real evaluations (it is filtered for the preview only)
    task_logger = logging.getLogger("instructeval_tasks.task")
    assert not task_logger.filters
