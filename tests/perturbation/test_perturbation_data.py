"""The vendored misspelling list: identity, content facts, attribution, loud failure."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from importlib import resources

import pytest

from instructeval_tasks.perturbation import MISSPELLINGS_SHA256, MisspellingDataError, load_misspellings
from instructeval_tasks.perturbation import misspelling as misspelling_module

PACKAGE = "instructeval_tasks.perturbation"


def _data_bytes(name: str) -> bytes:
    return resources.files(PACKAGE).joinpath("data", name).read_bytes()


def test_vendored_file_identity() -> None:
    raw = _data_bytes("correct_to_misspelling.json")
    assert len(raw) == 213_429
    assert hashlib.sha256(raw).hexdigest() == MISSPELLINGS_SHA256
    assert MISSPELLINGS_SHA256 == "2f8e118895e52426bacd0cd32dfd0c14708e845c910d129f2d03571fe9f75c8b"


def test_table_counts_match_the_note() -> None:
    table = load_misspellings()
    assert len(table) == 6523
    assert sum(len(v) for v in table.values()) == 9053
    assert max(len(v) for v in table.values()) == 24
    assert all(len(set(v)) == len(v) for v in table.values())
    assert sum(1 for k in table if k == k.lower()) == 3255
    multi_word = [k for k in table if " " in k]
    apostrophe = [k for k in table if "'" in k]
    hyphen = [k for k in table if "-" in k]
    digit = [k for k in table if any(c.isdigit() for c in k)]
    assert (len(multi_word), len(apostrophe), len(hyphen), len(digit)) == (68, 26, 8, 1)


def test_table_keeps_file_order() -> None:
    keys = list(load_misspellings())
    assert keys[:4] == ["abandoned", "Abandoned", "aberration", "Aberration"]
    assert keys.index("about") < keys.index("about a")
    assert keys.index("every time") < keys.index("every")
    assert keys.index("that") < keys.index("that's")


def test_keys_contain_no_regex_metacharacters() -> None:
    # HELM joins keys unescaped; that is only safe (and equal to escaping) for these characters.
    assert all(re.fullmatch(r"[\w' -]+", key) for key in load_misspellings())


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        load_misspellings()["new"] = ("x",)  # type: ignore[index]


def test_notice_attributes_helm_and_wikipedia() -> None:
    notice = _data_bytes("NOTICE").decode("utf-8")
    for required in (
        "crfm-helm 0.5.16",
        "helm/benchmark/augmentations/correct_to_misspelling.json",
        MISSPELLINGS_SHA256,
        "Apache License",
        "Stanford",
        "https://en.wikipedia.org/wiki/Wikipedia:Lists_of_common_misspellings/For_machines",
        "CC BY-SA",
        "NL-Augmenter",
    ):
        assert required in notice


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    load_misspellings.cache_clear()
    misspelling_module._misspelling_pattern.cache_clear()
    yield
    load_misspellings.cache_clear()
    misspelling_module._misspelling_pattern.cache_clear()


@pytest.mark.usefixtures("fresh_cache")
def test_altered_file_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    altered = _data_bytes("correct_to_misspelling.json").replace(b'"teh"', b'"tha"', 1)
    monkeypatch.setattr(misspelling_module, "_read_vendored_bytes", lambda: altered)
    with pytest.raises(MisspellingDataError, match="sha256"):
        load_misspellings()


@pytest.mark.usefixtures("fresh_cache")
def test_missing_file_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(misspelling_module, "MISSPELLINGS_FILE", "data/no_such_file.json")
    with pytest.raises(MisspellingDataError, match="not found"):
        load_misspellings()
