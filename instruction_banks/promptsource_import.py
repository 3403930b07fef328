"""Build the PromptSource bank from the promptsource 0.2.3 sdist (Apache-2.0, bigscience-workshop).

Usage::

    pip download --no-deps --no-binary :all: --ignore-requires-python promptsource==0.2.3 -d /tmp/ps
    python -m instructeval_banks.promptsource_import --sdist /tmp/ps/promptsource-0.2.3.tar.gz \\
        --out instruction_banks/promptsource

The sdist holds ``promptsource/templates/<dataset>/[<config>/]templates.yaml``. promptsource itself
is never imported (it does not install on Python >= 3.10): the YAML is read with a SafeLoader that
knows its ``!Template``/``!TemplateMetadata`` tags, and each template's Jinja is rendered here in a
sandbox where every dataset field renders as a placeholder marker.

Extraction, per template (in file order):

1. **Keep** a template when ``metadata.original_task`` is true or its target (after ``|||``) is the
   gold label ``answer_choices[label]`` (so HellaSwag's "Complete the sentence:" stays, topic or
   question-generation templates go). Drop the rest ("not an instruction for this task").
2. **Render** the input part (before ``|||``): string literals (``{{"world politics"}}``) render as
   text; ``answer_choices`` renders with the template's fixed choices (``{{answer_choices |
   join(", ")}}`` -> "anger, joy, optimism, sadness"); per-item choices and dataset fields render
   as placeholders. A ``{{list | choice}}`` over a literal list yields one candidate per element.
3. **Remove the input**: lines that are only a placeholder, optionally behind a short label
   (``Passage: {{passage}}``, ``(a) {{...}}``, ``Ending 1: {{...}}``) and bare cue lines
   (``Answer:``, ``Options:``) are dropped; a run of option lines holding the fixed answer choices
   becomes ", "-joined choices. The remaining lines are joined with single spaces. A placeholder
   that opens the text, or ends it after ``:``/``?``/``.``, is removed; one inside a sentence is
   replaced by a noun phrase naming the field ("the hypothesis") and, when the template started a
   new sentence after it, followed by a comma and a lower-cased word.
4. **Edits**: where the rule leaves ungrammatical text, :data:`EDITS` gives the instruction as the
   original InstructEval bank phrased it or the closest grammatical reading, by template id; the
   entry then records ``extraction: edited`` and the rule's output as ``rule_text``.
5. Drop an instruction that is empty after this, and a duplicate (case/whitespace-insensitive) of
   an earlier one of the task; the duplicate's template is listed under ``also_templates``.

Output: ``<out>/<task>.yaml`` per task, ``method: promptsource``, entry ids
``promptsource-<task>-<first 8 hex of the template id>[-<variant>]``, with the template id, name
and ``original_task`` as provenance per entry and the licence attribution in the file header. The
output is deterministic: rerunning on the same sdist regenerates the committed files byte for byte.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import yaml

from instructeval_tasks.specs import TASK_SPECS

PROMPTSOURCE_VERSION = "0.2.3"
SDIST_NAME = f"promptsource-{PROMPTSOURCE_VERSION}.tar.gz"
SOURCE_NOTE = (
    "promptsource 0.2.3 (bigscience-workshop/promptsource, PyPI sdist), "
    "promptsource/templates/{path}/templates.yaml"
)
LICENSE_NOTE = (
    "Apache-2.0; instruction text extracted from bigscience-workshop/promptsource 0.2.3 templates "
    "(Copyright the BigScience Workshop promptsource contributors), modified as described in "
    "instruction_banks/promptsource_import.py"
)

# task id -> template folders to try, first present wins; notes; field nouns: each task's
# task_spec.yaml (``promptsource:``).
TASK_SOURCES: dict[str, tuple[str, ...]] = {
    name: tuple(spec.promptsource["templates"]) for name, spec in TASK_SPECS.items() if spec.promptsource
}
TASK_NOTES = {name: spec.promptsource["note"] for name, spec in TASK_SPECS.items()
              if spec.promptsource and spec.promptsource.get("note")}

# How a field placeholder inside a sentence is named ("the <noun>"); per task, then generic.
FIELD_NOUNS: dict[str, dict[str, str]] = {
    **{name: dict(spec.promptsource["field_nouns"]) for name, spec in TASK_SPECS.items()
       if spec.promptsource and spec.promptsource.get("field_nouns")},
    "*": {"premise": "premise", "hypothesis": "hypothesis", "passage": "passage", "question": "question",
          "context": "context", "text": "text", "answer_choices": "options"},
}

# template id -> instruction text, where the extraction rule leaves ungrammatical text. Each edit is
# the original InstructEval bank's phrasing (manual/*.yaml) when it has one, else the closest
# grammatical reading of the rule's output; the entry records the rule's output as ``rule_text``.
EDITS: dict[str, str] = {
    # --- anli: the premise and hypothesis are spliced into the sentence ---
    # MNLI crowdsource (= original manual/anli.yaml item 0)
    "0cc3ae39-3997-4686-8c93-5d51457efa1f":
        "Using only the description and what you know about the world, is the hypothesis definitely "
        "correct, incorrect, or inconclusive?",
    # does it follow that (original item 2, plus the template's choices)
    "5459237b-97de-4340-bf7b-2939c3f7ca19": "Given the premise, does the hypothesis follow? Yes, no, or maybe?",
    # GPT-3 style
    "620aa3fc-d5eb-46f5-a1ee-4c754527aa97": "Is the hypothesis true, false, or neither?",
    # based on the previous passage
    "9b613182-c6ab-4427-9221-3d68f6d62765": "Based on the previous passage, is the hypothesis true? Yes, no, or maybe?",
    # justified in saying
    "a850110d-f1a3-49b4-949a-d3bfe9f81344": "Are we justified in saying that the hypothesis is true? Yes, no, or maybe?",
    # take the following as truth
    "bab86d5a-4f9c-40db-b619-a7b7d5cae681": "Take the premise as truth. Is the hypothesis then true, false, or inconclusive?",
    # must be true
    "bcd90047-3a2b-426b-b065-8a418f1317b8": "Given the premise, must the hypothesis be true? Yes, no, or maybe?",
    # can we infer
    "c4ed37ae-d7d7-4197-a725-ef2152fa3b1f": "Suppose the premise is true. Can we infer the hypothesis? Yes, no, or maybe?",
    # guaranteed/possible/impossible
    "ca24b93a-6265-462f-b140-e329c03d94fa": "Assume the premise is true. Is the hypothesis then guaranteed, possible, or impossible?",
    # always/sometimes/never
    "dbc68425-5c42-43ae-9748-70ce8c5a167e": "Suppose the premise is true. Is the hypothesis then always, sometimes, or never true?",
    # does this imply
    "e5b7fdd7-fdff-4630-889b-3c7a052e5da0": "Does the premise imply the hypothesis? Yes, no, or maybe?",
    # consider always/sometimes/never
    "e6f32b9c-7e0b-474a-a0d2-e84d20c22aba": "Keeping in mind the premise, consider the hypothesis. Is it always, sometimes, or never correct?",
    # claim true/false/inconclusive
    "ec249357-e672-4e7d-b8b6-d97ed7d090c5": "Based on that information, is the claim in the hypothesis true, false, or inconclusive?",
    # guaranteed true
    "ffa0a6f0-7186-4ccb-bb35-8b1affb747a0": "Given the premise, is the hypothesis guaranteed true? Yes, no, or maybe?",
    # --- boolq: the question is spliced into the sentence ---
    # after_reading
    "3e386463-1715-4578-9cba-07d11a0d3b61": "After reading this passage, answer the question. True or False?",
    # I wonder…
    "6cb6a026-c070-470a-b75d-bb8fdf424e35": "Having read that, I wonder what the answer to the question is.",
    # yes_no_question
    "7cf7acdf-e3a2-459f-a3e8-2e2d27dd6aa5": "Answer the following yes/no question.",
    # could you tell me…
    "7d21d974-0624-4d4f-9e8c-644e2d009cb5": "Having read that, could you tell me the answer to the question?",
    # exam ("EXAM\n1. Answer by yes or no.": the heading and list number are layout)
    "922d3e87-ac58-4731-84d1-f0a40e47afb5": "Answer by yes or no.",
    # based on the following passage
    "9a1bf459-8047-437c-9def-f21e960429cc": "Based on the following passage, answer the question.",
    # based on the previous passage
    "b2b3cb60-d6e3-491c-a09a-8201e13e417e": "Based on the previous passage, answer the question.",
    # valid_binary
    "eb78772c-e81e-4b8a-a77b-b75efd1c212a": "Is the answer to the question true or false?",
    # --- hellaswag: the context is spliced into the sentence ---
    # complete_first_then (= original manual/hellaswag.yaml item 0)
    "00caa8cb-7f67-43bc-9e90-fc1d5d329432": "Complete the description with an appropriate ending:",
    # Predict ending with hint (the hint names the activity label, which the prompt does not show)
    "6e9f8d7d-9016-45bc-b997-c42aeb2dc944": "How does this sentence end?",
    # if_begins_how_continues
    "def77598-682f-48de-b187-55db4d390f07": "If a description of a situation begins like this, then how does it continue?",
}


# --------------------------------------------------------------------------------------------
# Reading the sdist


class _TemplateLoader(yaml.SafeLoader):
    """SafeLoader that reads promptsource's ``!Template``/``!TemplateMetadata`` tags as mappings."""


def _mapping(loader: yaml.SafeLoader, node: yaml.Node) -> dict:
    return loader.construct_mapping(node, deep=True)


_TemplateLoader.add_constructor("!Template", _mapping)
_TemplateLoader.add_constructor("!TemplateMetadata", _mapping)


def load_templates_yaml(text: str) -> dict:
    return yaml.load(text, Loader=_TemplateLoader)  # noqa: S506 - a SafeLoader subclass


class Sdist:
    """The template files of a promptsource sdist (``.tar.gz``) or of an unpacked source tree."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._files: dict[str, bytes] = {}
        if self.path.is_dir():
            for file in sorted(self.path.rglob("templates.yaml")):
                rel = file.relative_to(self.path).as_posix()
                if "promptsource/templates/" in rel:
                    self._files[rel.split("promptsource/templates/", 1)[1]] = file.read_bytes()
        else:
            with tarfile.open(self.path, "r:*") as tar:
                for member in tar.getmembers():
                    name = member.name
                    if member.isfile() and name.endswith("/templates.yaml") and "promptsource/templates/" in name:
                        data = tar.extractfile(member)
                        assert data is not None
                        self._files[name.split("promptsource/templates/", 1)[1]] = data.read()
        if not self._files:
            raise SystemExit(f"{self.path}: no promptsource/templates/**/templates.yaml found")

    def folder(self, name: str) -> dict | None:
        raw = self._files.get(f"{name}/templates.yaml")
        return None if raw is None else load_templates_yaml(raw.decode("utf-8"))


# --------------------------------------------------------------------------------------------
# Rendering with placeholder fields

OPEN, CLOSE = "\ue000", "\ue001"
_SENTINEL = re.compile(OPEN + r"([^" + CLOSE + r"]*)" + CLOSE)


def _environment(state: dict):
    from jinja2 import ChainableUndefined
    from jinja2.sandbox import SandboxedEnvironment

    class Field(ChainableUndefined):
        """A dataset field: renders as a placeholder marker, survives attribute/index/call chains."""

        __slots__ = ()
        unsafe_callable = False  # the sandbox asks; a field's methods (``ctx.lower()``) return the field
        alters_data = False

        def __str__(self) -> str:
            return f"{OPEN}{self._undefined_name or 'field'}{CLOSE}"

        def __call__(self, *args: Any, **kwargs: Any) -> "Field":
            return self

        def __iter__(self) -> Iterator["Field"]:
            yield self

        def __len__(self) -> int:
            return 1

        def __int__(self) -> int:  # ``label | int`` (in targets)
            return 0

        def __float__(self) -> float:
            return 0.0

        def __bool__(self) -> bool:
            return True

    def choice(seq: Any) -> Any:
        if isinstance(seq, (list, tuple)) and seq:
            state["variants"] = max(state.get("variants", 1), len(seq))
            return seq[state.get("variant", 0) % len(seq)]
        return seq

    env = SandboxedEnvironment(undefined=Field, keep_trailing_newline=True)
    env.filters["choice"] = choice
    env.filters["highlight"] = lambda value: value
    env.filters["most_frequent"] = lambda items: items
    env.globals["zip"] = zip
    return env, Field


class _PerItem(list):
    """Answer choices that depend on the example: every choice renders as a placeholder."""

    def __init__(self, marker: str):
        super().__init__([marker])
        self.marker = marker

    def __getitem__(self, index: Any) -> str:  # any index is a per-item choice
        return self.marker


def fixed_choices(template: dict) -> list[str] | None:
    """The template's answer choices when they do not depend on the example, else ``None``."""
    from jinja2 import Environment, meta

    expr = template.get("answer_choices")
    if not expr:
        return None
    if meta.find_undeclared_variables(Environment().parse(expr)):
        return None
    return [choice.strip() for choice in Environment().from_string(expr).render().split("|||")]


def render_inputs(template: dict) -> list[str]:
    """The input part (before ``|||``) of every variant of the template, fields as placeholders."""
    state: dict = {}
    env, _field = _environment(state)
    choices = fixed_choices(template)
    answer_choices: Any = choices if choices is not None else (
        _PerItem(f"{OPEN}answer_choices{CLOSE}") if template.get("answer_choices") else None
    )
    compiled = env.from_string(template["jinja"])
    rendered = []
    variant = 0
    while True:
        state["variant"] = variant
        context = {"answer_choices": answer_choices} if answer_choices is not None else {}
        text = compiled.render(**context)
        rendered.append(text.split("|||", 1)[0])
        variant += 1
        if variant >= state.get("variants", 1):
            break
    return rendered


_GOLD_TARGET = re.compile(r"answer_choices\s*\[\s*label\b")


def is_task_instruction(template: dict) -> bool:
    """Rule 1: an instruction for the task itself (see the module docstring)."""
    target = template["jinja"].split("|||", 1)[1] if "|||" in template["jinja"] else ""
    original = bool((template.get("metadata") or {}).get("original_task"))
    return original or bool(_GOLD_TARGET.search(target))


# --------------------------------------------------------------------------------------------
# From the rendered input to the instruction

_S = OPEN + r"[^" + CLOSE + r"]*" + CLOSE
_LABEL = r"[A-Za-z][\w'/]*(?:\s[\w'/]+)?\s?:"  # at most two words and a colon: "Passage:", "Ending 1:"
_MARK = r"(?:\([A-Za-z0-9]\)|[A-Za-z0-9][.)]|-)"  # option markers: "(a)", "A.", "1)", "-"
_FIELD_LINE = re.compile(rf"^(?:{_LABEL}\s*|{_MARK}\s*)?(?:[\"']?{_S}[\"']?[\s?.!…]*)+$")
_CUE_LINE = re.compile(rf"^{_LABEL}$")
_OPTION_LINE = re.compile(rf"^{_MARK}\s+(.+?)\s*$")


def _noun(task: str, name: str) -> str:
    nouns = {**FIELD_NOUNS["*"], **FIELD_NOUNS.get(task, {})}
    return "the " + nouns.get(name, name.replace("_", " "))


def instruction_from_input(rendered: str, task: str, choices: list[str] | None) -> str:
    """Rules 3: strip the input placeholders and cue lines of a rendered input part."""
    lines = [line.strip() for line in rendered.split("\n")]
    pieces: list[str] = []
    pending_cue: str | None = None
    option_run: list[str] = []

    def flush_options() -> None:
        nonlocal pending_cue
        if option_run:
            joined = ", ".join(option_run)
            if pending_cue:
                pieces.append(f"{pending_cue} {joined}")
            elif pieces:
                pieces[-1] = f"{pieces[-1]} {joined}"
            else:
                pieces.append(joined)
            option_run.clear()
        pending_cue = None

    for line in lines:
        if not line:
            continue
        option = _OPTION_LINE.match(line)
        if choices and option and option.group(1) in choices:
            option_run.append(option.group(1))
            continue
        if _FIELD_LINE.match(line):
            continue
        flush_options()
        if _CUE_LINE.match(line):
            pending_cue = line
            continue
        pieces.append(line)
    flush_options()
    text = re.sub(r"\s+", " ", " ".join(pieces)).strip()
    # a placeholder (or several) opening the text: the input comes first
    text = re.sub(rf"^(?:[\"']?{_S}[\"']?(?:\.\.\.|…)?\s*)+", "", text)
    # placeholders closing the text after ":", "?" or ".": the input comes last
    text = re.sub(rf"(?<=[:?.!])\s*(?:[\"']?{_S}[\"']?[\s?.!…]*)+$", "", text)

    def in_sentence(match: re.Match) -> str:
        noun = _noun(task, match.group("name"))
        follow = match.group("follow")
        if follow:  # the template started a new sentence after the field
            word = match.group("word")
            return f"{noun}, {word[0].lower()}{word[1:]}" if word != "I" else f"{noun}, {word}"
        return noun

    text = re.sub(
        rf"[\"']?{OPEN}(?P<name>[^{CLOSE}]*){CLOSE}[\"']?(?P<follow>\s+(?P<word>[A-Z]\w*))?",
        in_sentence,
        text,
    )
    text = re.sub(r"\s+([?.!,:])", r"\1", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text if re.search(r"[A-Za-z]", text) else ""


# --------------------------------------------------------------------------------------------
# Building the bank


@dataclass
class Extracted:
    text: str
    template_id: str
    template_name: str
    original_task: bool
    variant: int | None = None
    rule_text: str | None = None
    also: list[dict] = field(default_factory=list)


@dataclass
class TaskImport:
    task: str
    folder: str
    entries: list[Extracted]
    dropped: list[dict]


def import_task(sdist: Sdist, task: str) -> TaskImport:
    from .schema import normalize_text

    for folder in TASK_SOURCES[task]:
        data = sdist.folder(folder)
        if data is not None:
            break
    else:
        raise SystemExit(f"{sdist.path}: none of {', '.join(TASK_SOURCES[task])} has templates for {task}")
    entries: list[Extracted] = []
    dropped: list[dict] = []
    seen: dict[str, Extracted] = {}
    for template_id, template in data["templates"].items():
        name = template["name"]
        original = bool((template.get("metadata") or {}).get("original_task"))
        if not is_task_instruction(template):
            dropped.append({"template_id": template_id, "name": name, "reason": "not an instruction for the task"})
            continue
        choices = fixed_choices(template)
        variants = render_inputs(template)
        for variant, rendered in enumerate(variants):
            rule_text = instruction_from_input(rendered, task, choices)
            text = EDITS.get(template_id, rule_text) if len(variants) == 1 else rule_text
            if not text:
                dropped.append({"template_id": template_id, "name": name, "reason": "no instruction once the input is removed"})
                continue
            key = normalize_text(text)
            if key in seen:
                seen[key].also.append({"template_id": template_id, "template_name": name})
                continue
            item = Extracted(
                text,
                template_id,
                name,
                original,
                variant if len(variants) > 1 else None,
                rule_text if text != rule_text else None,
            )
            seen[key] = item
            entries.append(item)
    used = {e.template_id for e in entries} | {a["template_id"] for e in entries for a in e.also}
    unused = [tid for tid in EDITS if tid in data["templates"] and tid not in used]
    if unused:
        raise SystemExit(f"EDITS for {task} name templates that produced no entry: {unused}")
    return TaskImport(task, folder, entries, dropped)


def _q(value: str) -> str:
    """A YAML double-quoted scalar (JSON string syntax is valid YAML)."""
    return json.dumps(value, ensure_ascii=False)


def render_bank_file(result: TaskImport) -> str:
    """The bank file text of one task (stable formatting, so regeneration is byte-identical)."""
    from .original_layout import TASK_TO_STEM

    source = SOURCE_NOTE.format(path=result.folder)
    lines = [
        f"# PromptSource instructions for {result.task}: generated by",
        "#   python -m instructeval_banks.promptsource_import --sdist promptsource-0.2.3.tar.gz --out instruction_banks/promptsource",
        "# Do not edit by hand; change the importer (rules, EDITS) and regenerate.",
        "# Licence: Apache-2.0 (bigscience-workshop/promptsource 0.2.3); see provenance below.",
        "method: promptsource",
        f"tasks: [{result.task}]",
        "provenance:",
        f"  source: {_q(source)}",
        f"  license: {_q(LICENSE_NOTE)}",
        f"  promptsource_dataset: {_q(result.folder)}",
        "  original_bank: "
        + _q(
            f"the original InstructEval bank (instructions/manual/{TASK_TO_STEM[result.task]}.yaml) holds 5 "
            "hand-edited PromptSource instructions; this file holds every usable template's instruction"
        ),
        f"  extraction: {_q('instruction_banks/promptsource_import.py (see its docstring for the rules)')}",
    ]
    if result.task in TASK_NOTES:
        lines.append(f"  note: {_q(TASK_NOTES[result.task])}")
    if result.dropped:
        lines.append("  dropped_templates:")
        for item in result.dropped:
            lines.append(f"    - {{template_id: {_q(item['template_id'])}, name: {_q(item['name'])}, reason: {_q(item['reason'])}}}")
    lines.append("entries:")
    for item in result.entries:
        suffix = "" if item.variant is None else f"-{item.variant}"
        lines.append(f"  - id: promptsource-{result.task}-{item.template_id[:8]}{suffix}")
        lines.append(f"    text: {_q(item.text)}")
        lines.append(f"    template_id: {_q(item.template_id)}")
        lines.append(f"    template_name: {_q(item.template_name)}")
        lines.append(f"    original_task: {'true' if item.original_task else 'false'}")
        if item.variant is not None:
            lines.append(f"    template_variant: {item.variant}")
        if item.rule_text is not None:
            lines.append("    extraction: edited")
            lines.append(f"    rule_text: {_q(item.rule_text)}")
        if item.also:
            lines.append("    also_templates:")
            for also in item.also:
                lines.append(f"      - {{template_id: {_q(also['template_id'])}, template_name: {_q(also['template_name'])}}}")
    return "\n".join(lines) + "\n"


def build(sdist_path: Path | str, tasks: list[str] | None = None) -> dict[str, str]:
    """task -> bank file text."""
    from .schema import check_bank_file

    sdist = Sdist(sdist_path)
    files = {task: render_bank_file(import_task(sdist, task)) for task in (tasks or list(TASK_SOURCES))}
    for task, text in files.items():  # the output must be a valid bank file
        _entries, errors = check_bank_file(Path(f"<promptsource {task}>"), data=yaml.safe_load(text))
        if errors:
            raise SystemExit("\n".join(errors))
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m instructeval_banks.promptsource_import",
        description="Extract the PromptSource instruction bank from the promptsource 0.2.3 sdist.",
    )
    parser.add_argument("--sdist", required=True, help=f"{SDIST_NAME} (or an unpacked source tree)")
    parser.add_argument("--out", required=True, help="output directory, e.g. instruction_banks/promptsource")
    parser.add_argument("--tasks", nargs="*", choices=list(TASK_SOURCES), help="only these tasks (default: all nine)")
    parser.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing")
    args = parser.parse_args(argv)
    out = Path(args.out)
    files = build(args.sdist, args.tasks)
    status = 0
    for task, text in files.items():
        path = out / f"{task}.yaml"
        if args.check:
            same = path.is_file() and path.read_bytes() == text.encode("utf-8")
            print(f"{'same' if same else 'DIFFERENT'} {path}")
            status |= 0 if same else 1
        else:
            out.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
            print(f"wrote {path} ({text.count('  - id: ')} entries)")
    return status


if __name__ == "__main__":
    sys.exit(main())
