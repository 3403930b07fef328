"""``SweepOptions``: everything ``run_sweep`` is asked to do, in one typed object.

Example:
    >>> options = SweepOptions(model="hf", model_args="pretrained=models/smollm2", tasks="agnews",
    ...                        methods="null,generic", output="out/sweep", data_dir="../shared/data")
    >>> options.profile, options.executor, options.budget is None
    ('quick', 'local', True)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .budget import Budget
    from .profiles import Profile
    from .shards import ShardSpec


@dataclass
class SweepOptions:
    """What to evaluate, where, and how (``instructeval run``'s flags, as ``lm_eval.simple_evaluate``'s arguments).

    Args:
        model: harness backend name (``hf``, ``instructeval-hf``, ``vllm``, ...).
        model_args: backend arguments, ``"pretrained=...,dtype=..."`` or a dict.
        tasks: task ids, harness names or groups (``agnews``, ``instructeval_agnews``, ``all``,
            ``instructeval_ii``), a comma list or a list.
        methods: selection methods whose bank entries are swept (``null,generic``, or ``all``).
        output: the sweep folder's parent; results go to ``<output>/<model label>/``.
        profile: a named profile (``quick``, ``paper``) or a ``Profile``: settings, K, seeds, test sample.
        overrides: profile fields to change (``{"test_sample": 20}``).
        data_dir: local data ``<dir>/<task>/{train,eval}.jsonl`` (default: ``$INSTRUCTEVAL_DATA_DIR``,
            else the HF hub).
        bank_dir: bank folder(s) layered over the shipped banks (a list or an ``os.pathsep`` join).
        model_label: the results folder name (default: from ``pretrained``).
        batch_size: harness batch size (an integer, ``auto`` or ``auto:N``).
        max_batch_size: the cap of ``auto``.
        device: device of local backends (``cpu``, ``cuda:0``; default: the backend's).
        log_samples: write per-item samples (the aggregation's bootstrap and budget need them).
        dry_run: plan and check everything, print what would run, write nothing.
        progress: show the progress bar.
        lock_wait: seconds to wait for another run holding the output's lock (``None`` or 0: refuse at
            once; a negative number: without limit, what ``--wait-lock`` alone asks).
        executor: who evaluates the chunks (``sweep.executor_registry.EXECUTORS``: ``local``, ``ray``).
        workers: Ray actors (``executor="ray"``).
        ray_address: Ray cluster to join (default: a local one).
        worker_resources: each Ray actor's resources (``"num_gpus=1"`` or a dict).
        shard: ``"I/N"`` or a ``ShardSpec``: run the I-th of N parts of the plan.
        leaderboard_tasks: also run the stock lm-eval counterparts (``""``: every task that has one;
            ``"hellaswag:25,boolq"`` picks and overrides the n-shot); ``None``: none.
        leaderboard_map: a map file replacing the tasks' ``stock:`` counterparts.
        budget: a fraction of the (instruction, item) grid, or a ``Budget`` (fraction, seed, ...).
        allow_truncation: run variants whose prompts exceed the model's window (refused by default:
            the harness cuts from the left, instruction first) and record per item what was cut.
        harness_tasks: lm-eval's own tasks (tasks, groups or tags, ``"hellaswag:10,gsm8k:5"``) to sweep
            the task-agnostic instructions over, each on its own protocol (``sweep.harness_runs``);
            ``tasks`` may then be empty.
        placements: where the harness tasks' instruction goes, each its own setting: ``description``
            (no chat template), ``chat-system``, ``chat-user`` (``harness.tasks.PLACEMENTS``).
        fewshot_as_multiturn: with a chat placement, demos as user/assistant turns (``None``:
            lm-eval's default, True) or folded into one user turn (False).
        harness_rows: how a harness task's test sample is drawn: ``balanced`` over its gold answers
            (as the nine tasks'), or ``uniform`` (its stock score then estimates the whole split's).
        ni_prompt_format: the Natural Instructions tasks' prompt, ``schema`` or ``tk-instruct`` (task
            metadata ``prompt_format``; recorded, and in the fingerprint, only when not ``schema``).
    """

    model: str
    model_args: str | dict | None
    tasks: list[str] | str
    methods: list[str] | str
    output: str | Path
    profile: str | Profile = "quick"
    overrides: dict[str, Any] | None = None
    data_dir: str | None = None
    bank_dir: str | list[str] | None = None
    model_label: str | None = None
    batch_size: int | str = 8
    max_batch_size: int | None = None
    device: str | None = None
    log_samples: bool = True
    dry_run: bool = False
    progress: bool = True
    lock_wait: float | None = None
    executor: str = "local"
    workers: int | None = None
    ray_address: str | None = None
    worker_resources: str | dict | None = None
    shard: str | ShardSpec | None = None
    leaderboard_tasks: str | None = None
    leaderboard_map: str | None = None
    budget: float | Budget | None = None
    allow_truncation: bool = False
    harness_tasks: str | None = None
    placements: tuple[str, ...] | list[str] = ("description",)
    fewshot_as_multiturn: bool | None = None
    harness_rows: str = "balanced"
    ni_prompt_format: str = "schema"
