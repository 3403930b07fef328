"""``instructeval-hf`` greedy generation equals the stock ``hf`` backend's, request by request.

Random tiny models repeat tokens rather than write text, so the stop strings below are chosen from
what they actually emit; what is tested is the prefix-shared prefill, the per-row stopping
(``until`` strings, EOS, ``max_gen_toks``), left truncation and the request order.
"""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance

MAX_LENGTH = 64
PREFIX = "Answer the question.\n\nQuestion: Who wrote Macbeth?\nAnswer: Shakespeare\n\n"
QUESTIONS = ["Who painted The Starry Night?", "What is the capital of Canada?", "Which element has the symbol O?"]


def gen_requests(stops: list[str]) -> list[Instance]:
    args = []
    for q in QUESTIONS:
        args.append((f"{PREFIX}Question: {q}\nAnswer:", {"until": ["\n\n", *stops], "max_gen_toks": 7}))
    args.append((f"{PREFIX}Question: {QUESTIONS[0]}\nAnswer:", {"until": ["\n\n", *stops], "max_gen_toks": 7}))  # duplicate
    args.append((PREFIX.strip(), {"until": ["\n\n", *stops], "max_gen_toks": 7}))  # a prefix of the others
    args += [(f"Question: {q}\nAnswer:", {"until": stops[:1], "max_gen_toks": 4, "do_sample": False}) for q in QUESTIONS]
    args.append(("Complete the problem. " * 15 + "Answer:", {"until": ["\n"], "max_gen_toks": 5}))  # truncated context
    args.append((f"{PREFIX}Question: {QUESTIONS[1]}\nAnswer:", {"until": [], "max_gen_toks": 3, "temperature": 0.0}))
    return [Instance("generate_until", {}, a, i) for i, a in enumerate(args)]


def _stops_seen(lm, reqs) -> list[str]:
    """Two short strings the stock model does emit, so that stopping is exercised."""
    outs = lm.generate_until([Instance("generate_until", {}, (r.args[0], {"until": [], "max_gen_toks": 7}), 0)
                              for r in reqs[:3]])
    text = "".join(outs)
    cands = [text[i : i + 2] for i in range(0, max(0, len(text) - 2), 3) if text[i : i + 2].strip()]
    return cands[:2] or ["zz"]


@pytest.mark.parametrize("model", ["gpt2", "llama-bos", "llama-nobos"])
@pytest.mark.parametrize("batch_size", [1, 4])
def test_greedy_generation_equals_stock(make_pair, model, batch_size):
    pair = make_pair(model, batch_size=batch_size, max_length=MAX_LENGTH)
    stops = _stops_seen(pair.stock, gen_requests(["zz"]))
    reqs = gen_requests(stops)
    want = pair.stock.generate_until(reqs)
    got = pair.new.generate_until(reqs)
    assert pair.new.prefix_stats.get("distinct_tokens"), "the prefix path was not used"
    assert got == want
    assert any(w for w in want), "every generation was empty: nothing compared"


@pytest.mark.parametrize("decode_batch_size", [1, 3, 64])
def test_decode_batch_size_changes_batching_not_text(make_pair, decode_batch_size):
    pair = make_pair("llama-nobos", batch_size=2, max_length=MAX_LENGTH)
    wide = make_pair("llama-nobos", batch_size=2, max_length=MAX_LENGTH, decode_batch_size=decode_batch_size)
    reqs = gen_requests(_stops_seen(pair.stock, gen_requests(["zz"])))
    assert wide.new.decode_batch_size == decode_batch_size
    assert wide.new.generate_until(reqs) == pair.stock.generate_until(reqs)


def test_decode_batch_size_must_be_positive(model_dirs):
    from instructeval_tasks.backend import InstructEvalHFLM

    with pytest.raises(ValueError, match="decode_batch_size must be >= 1"):
        InstructEvalHFLM(pretrained=str(model_dirs["gpt2"]), device="cpu", decode_batch_size=0)


def test_sampling_and_extra_kwargs_use_the_stock_code(make_pair, caplog):
    pair = make_pair("gpt2", batch_size=4, max_length=MAX_LENGTH)
    reqs = [Instance("generate_until", {}, (f"Question: {q}\nAnswer:", {"until": ["\n"], "max_gen_toks": 4, "top_k": 1,
                                                                        "do_sample": False}), i)
            for i, q in enumerate(QUESTIONS)]
    pair.new.prefix_stats = {}
    with caplog.at_level("WARNING"):
        got = pair.new.generate_until(reqs)
    assert got == pair.stock.generate_until(reqs)
    assert pair.new.prefix_stats == {}
    assert "generation kwargs ['top_k']" in caplog.text


def test_generation_config_processors_use_the_stock_code(make_pair):
    pair = make_pair("llama-nobos", batch_size=4, max_length=MAX_LENGTH)
    config = pair.new.model.generation_config
    saved = config.repetition_penalty
    try:
        config.repetition_penalty = 1.3
        assert "repetition_penalty" in pair.new._ie_greedy_unsupported({"do_sample": False, "temperature": 0.0})
    finally:
        config.repetition_penalty = saved
    assert pair.new._ie_greedy_unsupported({"do_sample": False, "temperature": 0.0}) is None


def test_progress_moves_with_each_decode_batch(make_pair, monkeypatch):
    """The progress bar is told as each decode batch finishes, not once at the end; every request counts."""
    from instructeval_tasks.backend import generation as backend_generation
    from instructeval_tasks.backend import model as backend_model

    pair = make_pair("llama-nobos", batch_size=2, max_length=MAX_LENGTH, decode_batch_size=2)
    reqs = [r for r in gen_requests(["zz"]) if r.args[1] == {"until": ["\n\n", "zz"], "max_gen_toks": 7}]
    steps: list[int] = []
    events: list[str] = []
    decode = backend_generation.GreedyDecoder.decode

    def recorded_decode(self, *args, **kwargs):
        events.append("decode")
        return decode(self, *args, **kwargs)

    class Bar:
        def __init__(self, *args, **kwargs):
            pass

        def update(self, n=1):
            steps.append(n)
            events.append("update")

        def close(self):
            pass

    monkeypatch.setattr(backend_model, "tqdm", Bar)
    monkeypatch.setattr(backend_generation.GreedyDecoder, "decode", recorded_decode)
    got = pair.new.generate_until(reqs)
    assert pair.new.prefix_stats.get("distinct_tokens"), "the prefix path was not used"
    monkeypatch.undo()
    assert got == pair.stock.generate_until(reqs)
    # 5 requests (one a duplicate of another) in decode batches of 2 distinct contexts
    assert sum(steps) == len(reqs) == 5 and len(steps) >= 2, steps
    assert events.index("update") < len(events) - 1 - events[::-1].index("decode"), events  # told between batches


@pytest.mark.parametrize("model", ["gpt2", "llama-bos"])
def test_a_later_generation_call_starts_from_the_kept_prefixes(make_pair, model):
    # the instruction and demo of the first call's questions head the later call's too
    pair = make_pair(model, batch_size=4, max_length=MAX_LENGTH)
    pair.new._ie_prefix_cache = None
    stops = _stops_seen(pair.stock, gen_requests(["zz"]))
    first, later = gen_requests(stops)[:2], gen_requests(stops)[2:4]
    assert pair.new.generate_until(first) == pair.stock.generate_until(first)
    got = pair.new.generate_until(later)
    assert pair.new.prefix_stats["cached_tokens"] >= 10, pair.new.prefix_stats
    assert got == pair.stock.generate_until(later)
