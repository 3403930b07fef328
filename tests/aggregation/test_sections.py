"""The report's sections registry: a new result kind is one module and one ``SECTIONS.register`` call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from instructeval_aggregation.cli import main as aggregate_main
from instructeval_aggregation.sections import SECTIONS, Section
from instructeval_aggregation.testing import grid, write_run


class ToyCount(Section):
    """Counts the results files it finds and says so in every place a section can."""

    name = "toy_count"

    def load(self, inputs, options, log):
        return sorted(str(p) for path in inputs.paths for p in Path(path).rglob("results_*.json"))

    def attach(self, result, loaded, inputs, log):
        result.toy_count = len(loaded)

    def files(self, result, out):
        (out / "data" / "toy_count.csv").write_text(f"files\n{result.toy_count}\n")
        return []

    def overview(self, result, summary):
        return [f"<li>toy: {result.toy_count} results files</li>"]

    def html(self, result, figures):
        return f"<h2>Toy count</h2><p>{result.toy_count}</p>"

    def summary(self, result):
        return {"toy_count": result.toy_count}

    def lines(self, result):
        return [f"toy: {result.toy_count} results files"]

    def tables_phrase(self, result):
        return "the toy table (data/toy_count.csv)"


@pytest.fixture
def toy_section():
    SECTIONS.register(ToyCount(), before="models")
    yield
    SECTIONS.unregister("toy_count")


def test_a_registered_section_reaches_every_output_of_the_report(toy_section, tmp_path, capsys):
    variants = grid(["agnews"], [("null", "null"), ("generic", "generic-0")], lambda *a: [1.0, 0.0, 1.0, 1.0],
                    settings=("zero_shot",))
    write_run(tmp_path / "runs", "m1", variants)
    assert aggregate_main([str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--bootstrap", "0"]) == 0
    said = capsys.readouterr().out.splitlines()
    out = tmp_path / "out"
    assert (out / "data" / "toy_count.csv").read_text() == "files\n1\n"
    assert json.loads((out / "summary.json").read_text())["toy_count"] == 1
    page = (out / "report.html").read_text()
    assert "<li>toy: 1 results files</li>" in page
    assert page.index("<h2>Toy count</h2>") < page.index("<h2>Models</h2>")  # where it was registered
    assert "toy: 1 results files" in said
    assert said[-1].startswith("wrote ") and "the toy table (data/toy_count.csv)" in said[-1]


def test_sections_have_unique_names_and_keep_their_order():
    names = SECTIONS.names()
    assert names[0] == "paper_tables" and names[-1] == "definitions" and len(set(names)) == len(names)
    with pytest.raises(ValueError, match="not yet registered"):
        SECTIONS.register(ToyCount.__new__(type("Again", (Section,), {"name": "models"})))


def test_the_sections_docstring_examples_hold():
    import doctest

    import instructeval_aggregation.html_parts as html_parts
    import instructeval_aggregation.sections as sections
    import instructeval_aggregation.sections.paper_tables as paper_tables

    for module in (sections, paper_tables, html_parts):
        failed, tried = doctest.testmod(module)
        assert tried and not failed, module.__name__
    assert "note" not in SECTIONS.names()


def test_a_report_without_figures_says_why_where_the_figures_would_be(tmp_path):
    variants = grid(["agnews"], [("null", "null"), ("generic", "generic-0")], lambda *a: [1.0, 0.0, 1.0, 1.0],
                    settings=("zero_shot",))
    write_run(tmp_path / "runs", "m1", variants)
    assert aggregate_main([str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--bootstrap", "0", "--no-plots"]) == 0
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.index("<p class='note'>plots skipped (--no-plots)</p>") < page.index("<h2>Models</h2>")
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["plots_note"] == "plots skipped (--no-plots)"
