"""Validation: every bad input gives a named error or warning, and never costs the good files."""

from __future__ import annotations

import json

import pytest

from instructeval_aggregation import AggregationError, aggregate, load_runs
from instructeval_aggregation.testing import SyntheticVariant, make_results, sweep_record, write_run


def good(tmp_path, model="m", **kwargs):
    variants = [
        SyntheticVariant("agnews", "null", "null", "zero_shot", value=0.5),
        SyntheticVariant("agnews", "generic", "g0", "zero_shot", value=0.6),
    ]
    return write_run(tmp_path, model, variants, samples=False, **kwargs)


def issues_of(runset, code):
    return [i for i in runset.issues.items if i.code == code]


def test_truncated_and_non_json_files_are_errors_and_others_survive(tmp_path):
    good(tmp_path)
    bad_dir = tmp_path / "broken"
    bad_dir.mkdir()
    text = json.dumps(make_results("x", [SyntheticVariant("boolq", "null", "null", "zero_shot", value=0.5)]))
    (bad_dir / "results_truncated.json").write_text(text[: len(text) // 2])
    (bad_dir / "results_garbage.json").write_text("this is not json")
    runset = load_runs([tmp_path])
    errors = issues_of(runset, "bad-json")
    assert sorted(e.file.rsplit("/", 1)[-1] for e in errors) == ["results_garbage.json", "results_truncated.json"]
    assert any("truncated" in e.message for e in errors)
    assert len(runset.variants) == 2  # the good file is intact
    result = aggregate(runset, n_boot=0)
    assert "agnews" in result.table("gain_zero_shot").columns
    with pytest.raises(AggregationError) as err:
        load_runs([tmp_path], strict=True)
    assert "results_truncated.json" in str(err.value)


def test_json_that_is_not_a_results_file(tmp_path):
    path = tmp_path / "results_other.json"
    path.write_text(json.dumps({"hello": "world"}))
    runset = load_runs([path])
    (issue,) = issues_of(runset, "not-results")
    assert issue.level == "error" and issue.file == str(path)


def test_missing_metadata_names_file_and_variant(tmp_path):
    v = SyntheticVariant("agnews", "generic", "g0", "few_shot", demo_seed=0, value=0.5, drop_metadata=("demo_seed", "setting"))
    path = write_run(tmp_path, "m", [v], samples=False)
    runset = load_runs([path])
    (issue,) = issues_of(runset, "missing-metadata")
    assert issue.file == str(path) and issue.variant == v.name
    assert "setting" in issue.message
    assert runset.variants == []


def test_contradictory_setting_is_an_error(tmp_path):
    v = SyntheticVariant("agnews", "generic", "g0", "few_shot", demo_seed=0, value=0.5, num_fewshot=0)
    path = write_run(tmp_path, "m", [v], samples=False)
    (issue,) = issues_of(load_runs([path]), "bad-metadata")
    assert "few_shot" in issue.message and issue.variant == v.name


def test_foreign_tasks_are_noted_not_errors(tmp_path):
    data = make_results("m", [SyntheticVariant("agnews", "null", "null", "zero_shot", value=0.5)])
    data["results"]["hellaswag"] = {"acc,none": 0.3}
    data["configs"]["hellaswag"] = {"task": "hellaswag", "metadata": {"version": 1.0}}
    path = tmp_path / "results_x.json"
    path.write_text(json.dumps(data))
    runset = load_runs([path])
    assert issues_of(runset, "not-instructeval")[0].level == "note"
    assert len(runset.variants) == 1


@pytest.mark.parametrize(
    "field, value",
    [("test_ids", [5, 6, 7]), ("template_sha", "other"), ("sweep", sweep_record(profile="other")), ("test_sample", 50)],
)
def test_protocol_disagreement_drops_the_model_task(tmp_path, field, value):
    """Two runs of one (model, task) with different protocols: error, the (model, task) dropped,
    other (model, task) pairs kept."""
    first = [SyntheticVariant("agnews", "null", "null", "zero_shot", value=0.5), SyntheticVariant("boolq", "null", "null", "zero_shot", value=0.5)]
    second = [SyntheticVariant("agnews", "generic", "g0", "zero_shot", value=0.6, metadata={field: value})]
    write_run(tmp_path, "m", first, samples=False, stamp="2024-01-01T00-00-00.000001")
    write_run(tmp_path, "m", second, samples=False, stamp="2024-01-02T00-00-00.000001")
    runset = load_runs([tmp_path])
    (issue,) = issues_of(runset, "protocol-mismatch")
    assert issue.level == "error" and "m/agnews" in issue.message
    assert {v.task for v in runset.variants} == {"boolq"}


def test_num_fewshot_disagreement(tmp_path):
    a = [SyntheticVariant("agnews", "null", "null", "few_shot", demo_seed=0, value=0.5)]
    b = [SyntheticVariant("agnews", "null", "null", "few_shot", demo_seed=1, value=0.5, num_fewshot=4)]
    write_run(tmp_path, "m", a, samples=False, stamp="s1")
    write_run(tmp_path, "m", b, samples=False, stamp="s2")
    assert "num_fewshot" in issues_of(load_runs([tmp_path]), "protocol-mismatch")[0].message


def test_soft_protocol_drift_is_a_warning(tmp_path):
    a = [SyntheticVariant("agnews", "null", "null", "zero_shot", value=0.5)]
    b = [SyntheticVariant("agnews", "generic", "g0", "zero_shot", value=0.5, metadata={"plugin_version": "0.2.0"})]
    write_run(tmp_path, "m", a, samples=False, stamp="s1")
    write_run(tmp_path, "m", b, samples=False, stamp="s2")
    runset = load_runs([tmp_path])
    assert issues_of(runset, "protocol-drift")[0].level == "warning"
    assert len(runset.variants) == 2


def test_an_edited_scoring_version_is_flagged(tmp_path):
    """Results scored under another scoring_version cannot be compared with the others (error, the
    (model, task) is dropped) and are not this release's scores (warning)."""
    from instructeval_tasks.fingerprint import SCORING_VERSION

    def run_fp(version):
        return {"run_fingerprint": {"scoring_version": version, "model": "hf"}}

    a = [SyntheticVariant("agnews", "null", "null", "zero_shot", value=0.5, metadata=run_fp(SCORING_VERSION))]
    b = [SyntheticVariant("agnews", "generic", "g0", "zero_shot", value=0.5, metadata=run_fp("99"))]
    write_run(tmp_path, "m", a, samples=False, stamp="s1")
    write_run(tmp_path, "m", b, samples=False, stamp="s2")
    runset = load_runs([tmp_path])
    (mismatch,) = issues_of(runset, "protocol-mismatch")
    assert mismatch.level == "error" and "scoring_version" in mismatch.message and not runset.variants
    (stale,) = issues_of(runset, "scoring-version")
    assert stale.level == "warning" and "'99'" in stale.message and f"{SCORING_VERSION!r}" in stale.message


def test_duplicates(tmp_path):
    """Equal duplicates merge (note); different numbers are an error and every copy is dropped."""
    same = [SyntheticVariant("agnews", "null", "null", "zero_shot", value=0.5)]
    write_run(tmp_path, "m", same, samples=False, stamp="s1")
    write_run(tmp_path, "m", same, samples=False, stamp="s2")
    write_run(tmp_path, "m", [SyntheticVariant("agnews", "generic", "g0", "zero_shot", value=0.6)], samples=False, stamp="s3")
    write_run(tmp_path, "m", [SyntheticVariant("agnews", "generic", "g0", "zero_shot", value=0.7)], samples=False, stamp="s4")
    runset = load_runs([tmp_path])
    assert issues_of(runset, "duplicate")[0].level == "note"
    (conflict,) = issues_of(runset, "duplicate-conflict")
    assert conflict.level == "error" and "results_s3.json" in conflict.message and "results_s4.json" in conflict.message
    assert [(v.method, v.instruction) for v in runset.variants] == [("null", "null")]


def test_instruction_id_with_two_texts(tmp_path):
    a = [SyntheticVariant("agnews", "generic", "g0", "zero_shot", value=0.5, instruction_text="Classify.")]
    b = [SyntheticVariant("agnews", "generic", "g0", "few_shot", demo_seed=0, value=0.5, instruction_text="Sort.")]
    write_run(tmp_path, "m", a, samples=False, stamp="s1")
    write_run(tmp_path, "m", b, samples=False, stamp="s2")
    runset = load_runs([tmp_path])
    assert issues_of(runset, "instruction-conflict") and runset.variants == []


def test_missing_path_and_empty_input(tmp_path):
    runset = load_runs([tmp_path / "nope"])
    assert issues_of(runset, "missing-file")
    with pytest.raises(AggregationError) as err:
        aggregate(runset)
    assert "nope" in str(err.value)


def test_model_identity(tmp_path):
    """Label: metadata model_label, else the pretrained path's last part, hub ids kept whole."""
    v = SyntheticVariant("agnews", "null", "null", "zero_shot", value=0.5)
    write_run(tmp_path / "a", "x", [v], samples=False, pretrained="/data/models/SmolLM2-135M/")
    write_run(tmp_path / "b", "y", [v], samples=False, pretrained="facebook/opt-1.3b")
    labelled = SyntheticVariant("agnews", "null", "null", "zero_shot", value=0.5, metadata={"model_label": "my-model"})
    write_run(tmp_path / "c", "z", [labelled], samples=False)
    assert load_runs([tmp_path]).models == ["SmolLM2-135M", "facebook/opt-1.3b", "my-model"]


def test_extra_keys_are_tolerated(tmp_path):
    v = SyntheticVariant("agnews", "null", "null", "zero_shot", value=0.5, metadata={"surprise": {"a": 1}})
    write_run(tmp_path, "m", [v], samples=False, extra={"brand_new_key": [1, 2]})
    runset = load_runs([tmp_path])
    assert len(runset.variants) == 1 and not [i for i in runset.issues.items if i.level != "note"]


def test_samples_are_found_by_stamp_or_uniquely(tmp_path):
    v = SyntheticVariant("agnews", "null", "null", "zero_shot", correct=[1, 0, 1, 1])
    path = write_run(tmp_path, "m", [v])
    assert load_runs([path]).variants[0].samples_path.endswith(f"samples_{v.name}_2024-01-01T00-00-00.000000.jsonl")
    # The sweep store names results by chunk and samples by time: the only candidate is used.
    renamed = path.with_name("results_agnews__null__null.json")
    path.rename(renamed)
    assert load_runs([renamed]).variants[0].samples_path is not None


def test_runner_shaped_metadata(tmp_path):
    """As ``instructeval run`` writes it: ``sweep.name`` (not ``profile``), a per-instruction
    ``sweep.instruction_text_sha``, model_args as a dict, results named by chunk and samples by time.
    None of that is a protocol difference."""
    from instructeval_aggregation.testing import make_results, sample_lines

    def sweep(sha):
        record = sweep_record()
        record["name"] = record.pop("profile")
        record["instruction_text_sha"] = sha
        return record

    folder = tmp_path / "SmolLM2-135M"
    folder.mkdir()
    for iid, method, correct in (("null", "null", [1, 0, 0, 1]), ("g0", "generic", [1, 1, 0, 1])):
        v = SyntheticVariant("agnews", method, iid, "zero_shot", correct=correct, metadata={"model_label": "SmolLM2-135M"})
        data = make_results("SmolLM2-135M", [v], sweep=sweep(f"sha-{iid}"))
        data["config"]["model_args"] = {"pretrained": "/models/smollm2", "dtype": "bfloat16"}
        data["model_name"] = "SmolLM2-135M"
        (folder / f"results_agnews__{method}__{iid}__abcd1234.json").write_text(json.dumps(data))
        lines = "".join(json.dumps(r) + "\n" for r in sample_lines(v))
        (folder / f"samples_{v.name}_2026-01-01T00-00-00.{iid}.jsonl").write_text(lines)
    runset = load_runs([tmp_path])
    assert [i for i in runset.issues.items if i.level != "note"] == []
    assert all(v.samples_path for v in runset.variants)
    assert runset.runs[0].profile == "test" and "instruction_text_sha" not in runset.runs[0].sweep
    result = aggregate(runset, n_boot=50)
    assert result.ci is not None and (result.ci["status"] == "ok").all()


def test_cli_registration_and_help(capsys):
    from instructeval_tasks.cli import build_parser

    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["aggregate", "--help"])
    out = capsys.readouterr().out
    assert "--null-weight" in out and "--model-registry" in out and "--strict" in out


def test_docstring_examples():
    """The examples in the modules' docstrings are true."""
    import doctest
    import importlib

    for name in ("catalog", "loading", "per_instruction", "relative_gain", "registry", "tables", "bootstrap", "testing"):
        module = importlib.import_module(f"instructeval_aggregation.{name}")
        failures, _ = doctest.testmod(module)
        assert failures == 0, name


def test_nothing_left_after_the_metric_choice_is_an_error(tmp_path):
    v = SyntheticVariant("agnews", "null", "null", "zero_shot", value=0.5, metrics={"acc_per_token": None})
    write_run(tmp_path, "m", [v], samples=False)
    with pytest.raises(AggregationError) as err:
        aggregate(load_runs([tmp_path]), metric="acc_per_token")
    assert "metric-missing" in str(err.value)
