"""The PromptSource importer: pinned output for AG News and BoolQ, the extraction rules, regeneration."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest
import yaml

from instructeval_banks import load_bank, parse_bank_file
from instructeval_banks import promptsource_import as psi

REPO = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "data" / "promptsource-0.2.3"
COMMITTED = REPO / "instruction_banks" / "promptsource"
TASKS = ["agnews", "anli", "boolq", "imdb", "emotion", "cosmosqa", "hellaswag", "nq_open", "triviaqa"]

# Exact entries (id, text) of the two pinned tasks.
AGNEWS = [
    ("promptsource-agnews-24e44a81", "What label best describes this news article?"),
    ("promptsource-agnews-8fdc1056",
     "Is this a piece of news regarding world politics, sports, business, or science and technology?"),
    ("promptsource-agnews-918267e0",
     "Would you recommend the following article to a politician, an athlete, a business executive, or a scientist?"),
    ("promptsource-agnews-9345df33",
     "Which of the following sections of a newspaper would this article likely appear in? "
     "World News, Sports, Business, or Science and Technology?"),
    ("promptsource-agnews-98534347", "Which section of a newspaper would this article likely appear in?"),
]
BOOLQ = [
    ("promptsource-boolq-3e386463", "After reading this passage, answer the question. True or False?"),
    ("promptsource-boolq-6cb6a026", "Having read that, I wonder what the answer to the question is."),
    ("promptsource-boolq-7cf7acdf", "Answer the following yes/no question."),
    ("promptsource-boolq-7d21d974", "Having read that, could you tell me the answer to the question?"),
    ("promptsource-boolq-922d3e87", "Answer by yes or no."),
    ("promptsource-boolq-9a1bf459", "Based on the following passage, answer the question."),
    ("promptsource-boolq-9f4c6b0a", "Exercise: read the text and answer the question by True or False."),
    ("promptsource-boolq-b2b3cb60", "Based on the previous passage, answer the question."),
    ("promptsource-boolq-eb78772c", "Is the answer to the question true or false?"),
]


# ------------------------------------------------------------------------------ pinned output

@pytest.mark.parametrize("task, expected", [("agnews", AGNEWS), ("boolq", BOOLQ)])
def test_committed_bank_pinned(task, expected):
    entries = load_bank().entries("promptsource", task)
    assert [(e.id, e.text) for e in entries] == expected


def test_importer_regenerates_the_committed_files_from_the_fixture_tree():
    files = psi.build(FIXTURE, ["agnews", "boolq"])
    for task, text in files.items():
        assert text.encode("utf-8") == (COMMITTED / f"{task}.yaml").read_bytes(), task


def test_importer_reads_a_tar_gz_sdist(tmp_path):
    sdist = tmp_path / psi.SDIST_NAME
    with tarfile.open(sdist, "w:gz") as tar:
        tar.add(FIXTURE, arcname="promptsource-0.2.3")
    out = tmp_path / "out"
    assert psi.main(["--sdist", str(sdist), "--out", str(out), "--tasks", "agnews", "boolq"]) == 0
    for task in ("agnews", "boolq"):
        assert (out / f"{task}.yaml").read_bytes() == (COMMITTED / f"{task}.yaml").read_bytes()
    # --check compares without writing
    assert psi.main(["--sdist", str(sdist), "--out", str(COMMITTED), "--tasks", "agnews", "--check"]) == 0
    (out / "agnews.yaml").write_text("changed\n")
    assert psi.main(["--sdist", str(sdist), "--out", str(out), "--tasks", "agnews", "--check"]) == 1


def _full_sdist() -> Path | None:
    for candidate in (os.environ.get("PROMPTSOURCE_SDIST"), f"/tmp/ps/{psi.SDIST_NAME}"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def test_importer_regenerates_all_nine_files_from_the_sdist():
    sdist = _full_sdist()
    if sdist is None:
        pytest.skip("promptsource-0.2.3.tar.gz not available (set PROMPTSOURCE_SDIST)")
    files = psi.build(sdist)
    assert sorted(files) == sorted(TASKS)
    for task, text in files.items():
        assert text.encode("utf-8") == (COMMITTED / f"{task}.yaml").read_bytes(), task


# ------------------------------------------------------------------------------ committed files

@pytest.mark.parametrize("task", TASKS)
def test_committed_file_provenance_and_licence(task):
    path = COMMITTED / f"{task}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["method"] == "promptsource" and data["tasks"] == [task]
    assert "Apache-2.0" in data["provenance"]["license"]
    assert "bigscience-workshop/promptsource 0.2.3" in data["provenance"]["license"]
    assert "promptsource 0.2.3" in data["provenance"]["source"]
    entries = parse_bank_file(path)
    assert entries, task
    for raw in data["entries"]:
        assert raw["id"].startswith(f"promptsource-{task}-")
        assert len(raw["template_id"]) == 36 and raw["template_name"]
        assert "|||" not in raw["text"] and "{" not in raw["text"] and "}" not in raw["text"]
        if raw.get("extraction") == "edited":
            assert raw["template_id"] in psi.EDITS and raw["rule_text"] != raw["text"]


def test_triviaqa_uses_unfiltered_and_says_so():
    data = yaml.safe_load((COMMITTED / "triviaqa.yaml").read_text(encoding="utf-8"))
    assert data["provenance"]["promptsource_dataset"] == "trivia_qa/unfiltered"
    assert "no trivia_qa/rc" in data["provenance"]["note"]


def test_original_manual_bank_strings_that_promptsource_has_verbatim():
    """Strings of the original manual/ bank that are plain PromptSource instructions come out identical."""
    texts = {t: {e.text for e in load_bank().entries("promptsource", t)} for t in TASKS}
    assert "What label best describes this news article?" in texts["agnews"]
    assert "Which section of a newspaper would this article likely appear in?" in texts["agnews"]
    assert "Categorize the tweet into one of the following options: anger, joy, optimism, sadness" in texts["emotion"]
    assert "What is the emotion of the text? Hint: anger, joy, optimism, sadness" in texts["emotion"]
    assert ("Using only the description and what you know about the world, is the hypothesis definitely "
            "correct, incorrect, or inconclusive?") in texts["anli"]
    assert "The task is to generate the ending for the sentence:" in texts["hellaswag"]
    assert "Complete the description with an appropriate ending:" in texts["hellaswag"]
    assert "I've always wondered:" in texts["nq_open"] and "Answer the following question." in texts["triviaqa"]


# ------------------------------------------------------------------------------ extraction rules

def _template(jinja: str, choices: str | None = None, original: bool = True) -> dict:
    return {"jinja": jinja, "answer_choices": choices, "metadata": {"original_task": original}}


def _extract(template: dict, task: str = "agnews") -> list[str]:
    choices = psi.fixed_choices(template)
    return [psi.instruction_from_input(r, task, choices) for r in psi.render_inputs(template)]


def test_yaml_tags_are_read_without_promptsource():
    text = (FIXTURE / "promptsource" / "templates" / "ag_news" / "templates.yaml").read_text()
    data = psi.load_templates_yaml(text)
    assert len(data["templates"]) == 7
    first = data["templates"]["24e44a81-a18a-42dd-a71c-5b31b2d2cb39"]
    assert first["name"] == "classify_question_first" and first["metadata"]["original_task"] is True


def test_answer_choices_join_renders_the_fixed_choices():
    template = _template(
        'Which emotion among {{answer_choices | join(", ")}} fits?\n\n{{text}}|||\n{{answer_choices[label]}}',
        "anger ||| joy ||| sadness",
    )
    assert _extract(template) == ["Which emotion among anger, joy, sadness fits?"]


def test_option_lines_become_a_joined_list_and_field_lines_go():
    template = _template(
        "{{text}}\n\nCategorize the tweet:\n(a) {{answer_choices[0]}}\n(b) {{answer_choices[1]}}\n|||\n{{answer_choices[label]}}",
        "anger ||| joy",
    )
    assert _extract(template) == ["Categorize the tweet: anger, joy"]
    per_item = _template(
        "Read and choose.\nContext: {{ context }}\nQuestion: {{ question }}\nOptions:\nA. {{ answer0 }}\nB. {{ answer1 }}\n|||x",
        "{{answer0}} ||| {{answer1}}",
    )
    assert _extract(per_item, "cosmosqa") == ["Read and choose."]


def test_string_literals_render_and_trailing_or_leading_inputs_go():
    assert _extract(_template('{{text}} \nIs this about {{"sports or business"}}? ||| {{answer_choices[label]}}', "a ||| b")) == [
        "Is this about sports or business?"
    ]
    assert _extract(_template("Complete the sentence: {{ctx}}\n|||\n{{answer_choices[label | int()]}}", "{{endings | join(' ||| ')}}"), "hellaswag") == [
        "Complete the sentence:"
    ]


def test_a_field_inside_a_sentence_becomes_a_noun_phrase():
    template = _template('Given {{premise}} Should we assume that "{{hypothesis}}" is true? ||| {{ answer_choices[label] }}', "Yes ||| No")
    assert _extract(template, "anli") == ["Given the premise, should we assume that the hypothesis is true?"]


def test_random_choice_over_a_literal_list_yields_every_variant():
    template = _template(
        "{% set prompts = ['Pick the ending: ', 'How does it end? '] %}\n{{prompts | choice}}\n{{ctx}}\n|||\n{{answer_choices[label | int()]}}",
        "{{endings | join(' ||| ')}}",
    )
    assert _extract(template, "hellaswag") == ["Pick the ending:", "How does it end?"]


def test_only_cue_labels_leave_nothing():
    assert _extract(_template("Question : {{question}}\nAnswer :\n|||\n{{answer|choice}}")) == [""]
    assert _extract(_template("Search query: {{question}}\nResponse:\n|||\n{{answer|choice}}")) == [""]


@pytest.mark.parametrize(
    "jinja, original, keep",
    [
        ("{{text}} Topic? ||| {{activity_label}}", False, False),  # another task
        ("{{text}} This is not a ||| {{ answer_choices [1-label]}} review.", False, False),  # negated label
        ("Complete: {{ctx}} ||| {{answer_choices[label | int()]}}", False, True),  # same task, not "original"
        ("{{question}} ||| {{answer|choice}}", True, True),
    ],
)
def test_which_templates_are_instructions_for_the_task(jinja, original, keep):
    assert psi.is_task_instruction(_template(jinja, "a ||| b", original)) is keep


def test_dropped_templates_are_listed_with_a_reason():
    data = yaml.safe_load((COMMITTED / "hellaswag.yaml").read_text(encoding="utf-8"))
    names = {d["name"]: d["reason"] for d in data["provenance"]["dropped_templates"]}
    assert names["Topic of the context"] == "not an instruction for the task"
    boolq = yaml.safe_load((COMMITTED / "boolq.yaml").read_text(encoding="utf-8"))
    assert boolq["provenance"]["dropped_templates"] == [
        {"template_id": "492f0f88-4370-46cd-839b-1de37a55aeda", "name": "GPT-3 Style",
         "reason": "no instruction once the input is removed"}
    ]


def test_duplicates_record_the_other_template():
    data = yaml.safe_load((COMMITTED / "agnews.yaml").read_text(encoding="utf-8"))
    first = data["entries"][0]
    assert first["template_name"] == "classify_question_first"
    assert first["also_templates"] == [{"template_id": "cb355f33-7e8c-4455-a72b-48d315bd4f60", "template_name": "classify"}]
