"""The harness's environment record is collected once per process and copied into every call."""

import lm_eval.evaluator as evaluator

from instructeval_tasks.sweep import env_info


def test_environment_fields_are_collected_once_and_restored(monkeypatch):
    calls = []

    def fake_add_env_info(storage):
        calls.append(1)
        storage.update({"pretty_env_info": f"collected {len(calls)}", "lm_eval_version": "x"})

    monkeypatch.setattr(evaluator, "add_env_info", fake_add_env_info)
    monkeypatch.setattr(env_info, "_collected", {})
    first, second = {"results": 1}, {}
    with env_info.environment_info_once():
        evaluator.add_env_info(first)
        evaluator.add_env_info(second)
    assert calls == [1]
    assert first == {"results": 1, "pretty_env_info": "collected 1", "lm_eval_version": "x"}
    assert second == {"pretty_env_info": "collected 1", "lm_eval_version": "x"}
    second["pretty_env_info"] = "changed"  # each call gets its own copy
    with env_info.environment_info_once():
        third = {}
        evaluator.add_env_info(third)
    assert third["pretty_env_info"] == "collected 1" and calls == [1]
    assert evaluator.add_env_info is fake_add_env_info  # the harness's own function is back
