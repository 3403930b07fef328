"""Budgeted chunks pooled into one harness call: which chunks pool, and what each chunk's file gets."""

from __future__ import annotations

import json
from types import SimpleNamespace

import lm_eval
import pytest

from instructeval_tasks.sweep import run_sweep
from instructeval_tasks.sweep.budget import BUDGET_KEY, Budget
from instructeval_tasks.sweep.chunk import POOL_ITEMS, stock_path_note, take_pool
from instructeval_tasks.sweep.executors import JobQueue
from instructeval_tasks.sweep.shards import CLAIMS_DIR, ClaimingQueue


def _job(key: str, items: int | None, placement: str = "description"):
    """A stand-in chunk of one variant with ``items`` budgeted cells (None: not budgeted)."""
    metadata = {BUDGET_KEY: {"items": list(range(items))}} if items is not None else {}
    variant = SimpleNamespace(name=key, placement=placement, fewshot_as_multiturn=None, chunk=key, metadata=metadata)
    return SimpleNamespace(key=key, variants=[variant], metadata={key: metadata}, names=[key], poolable=True)


def test_budgeted_chunks_pool_up_to_the_item_limit_and_the_rest_waits_its_turn():
    jobs = [_job(f"c{k}", 60) for k in range(5)]
    queue = JobQueue(jobs)
    assert take_pool(queue, max_items=POOL_ITEMS) == jobs[:3]  # 180 items; a fourth would make 240
    assert take_pool(queue, max_items=POOL_ITEMS) == jobs[3:]
    assert take_pool(queue) == []


def test_a_pool_takes_at_most_max_jobs_chunks_so_parallel_workers_share_them():
    jobs = [_job(f"c{k}", 10) for k in range(5)]
    queue = JobQueue(jobs)
    assert take_pool(queue, max_jobs=3) == jobs[:3]  # 30 items would fit 200; the chunk count stops it
    assert take_pool(queue, max_jobs=3) == jobs[3:]


@pytest.mark.parametrize("other", [_job("full", None), _job("chat", 10, placement="chat-system"),
                                   SimpleNamespace(key="harness", poolable=False)])
def test_a_chunk_of_another_kind_is_not_pooled_and_comes_next(other):
    first, last = _job("a", 10), _job("b", 10)
    queue = JobQueue([first, other, last])
    assert take_pool(queue) == [first]
    assert take_pool(queue) == [other]  # evaluated on its own (full items, another placement, a harness task)
    assert take_pool(queue) == [last]


def test_a_pool_takes_no_chunk_that_another_shard_holds(tmp_path):
    from filelock import FileLock

    jobs = [_job(f"c{k}", 10) for k in range(3)]
    queue = ClaimingQueue(jobs, tmp_path, still_pending=lambda job: job)
    (tmp_path / CLAIMS_DIR).mkdir()
    held = FileLock(str(tmp_path / CLAIMS_DIR / "c1.lock"))  # another shard evaluates chunk c1
    held.acquire()
    try:
        assert take_pool(queue) == [jobs[0], jobs[2]]  # did not wait for the held chunk
    finally:
        held.release()
    assert take_pool(queue) == [jobs[1]]  # now free: taken (waiting is allowed for a pool's first chunk)


def test_a_pooled_call_names_the_pool_when_requests_fell_back():
    record = {"prefix_requests": 30, "stock_requests": 10, "stock_reasons": {"too long": 10}, "pooled_variants": 6}
    assert stock_path_note({"config": {"instructeval_hf": record}}) == \
        " [10 of 40 requests of a call pooling 6 variants on the stock path: too long]"


def test_a_budgeted_sweep_makes_one_harness_call_per_pool_and_one_file_per_chunk(tmp_path, tiny_model_dir,
                                                                                 tiny_data_dir, monkeypatch, capsys):
    calls = []
    real = lm_eval.simple_evaluate

    def counting(*args, **kwargs):
        calls.append([t.config.task for t in kwargs["tasks"]])
        return real(*args, **kwargs)

    monkeypatch.setattr(lm_eval, "simple_evaluate", counting)
    report = run_sweep(model="hf", model_args=f"pretrained={tiny_model_dir},dtype=float32", tasks="agnews",
                       methods="null,generic", output=tmp_path, profile="quick", data_dir=str(tiny_data_dir),
                       progress=True, budget=Budget(0.25, min_items=2),
                       overrides={"instructions_per_method": 5, "test_sample": 8, "settings": ["zero_shot"]})
    assert report.evaluated == 6
    assert len(calls) == 1 and len(calls[0]) == 6  # null's 8 cells + 5 x 2 cells: one pool
    files = sorted(tmp_path.rglob("results_*.json"))
    assert len(files) == 6  # one file per (task, instruction) chunk, as without pooling
    for path in files:
        data = json.loads(path.read_text())
        (name,) = data["results"]
        assert set(data["configs"]) == set(data["n-samples"]) == {name}
        items = data["configs"][name]["metadata"]["budget"]["items"]
        assert data["n-samples"][name]["effective"] == len(items)
        (samples,) = tmp_path.rglob(f"samples_{name}_*.jsonl")
        assert [json.loads(line)["doc_id"] for line in samples.read_text().splitlines()] == items
    assert capsys.readouterr().err.count("done instructeval_agnews__") == 6  # progress still per variant
