"""lm-eval's own tasks with an instruction: ``instructeval run --harness-tasks NAME[:NSHOT],...``.

A variant of a harness task changes exactly one thing, the instruction, placed where the harness
places a task description: ``description`` becomes ``instruction + fewshot_delimiter + <the task's
own description>`` (the delimiter is the task's own, ``"\\n\\n"`` by default), so the prompt reads
``instruction``, a blank line, then what the stock task would have shown. Everything else is the
stock task's: prompt, ``process_docs``, few-shot split, sampler, metrics, filters, generation
kwargs, n-shot (unless ``:NSHOT`` sets it). **The null instruction leaves the config as it is**: its
requests are those of ``lm_eval --tasks NAME`` on the same items.

Items are selected the way ``lm_eval --samples`` selects them: the task keeps its whole evaluation
split, and the evaluation gets ``samples={name: sorted doc ids}`` -- a seeded sample, balanced over
the gold answers for ``multiple_choice`` tasks -- so the harness draws each item's demos from one
seeded stream in the same order as a plain run, and the samples log's ``doc_id`` is the item's row.

Example:
    >>> parse_harness_tasks("hellaswag:10,boolq")
    [HarnessTaskRef(name='hellaswag', num_fewshot=10), HarnessTaskRef(name='boolq', num_fewshot=None)]
"""

from __future__ import annotations

import copy
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..errors import UserError, did_you_mean
from ..options import PLACEMENTS, first_user_turn_prefixed
from ..sampling import select_indices
from .local_data import LocalDataError, local_splits

# Where the instruction goes (a protocol axis: each placement is its own setting):
# - description: the task's description, no chat template (lm_eval's plain prompt);
# - chat-system: chat template on, the instruction is the system message (where lm_eval
#   --apply_chat_template puts a description);
# - chat-user: chat template on, the instruction heads the first user turn.
FEWSHOT_SEED = 1234  # lm_eval.simple_evaluate's default fewshot_random_seed


class HarnessTaskError(UserError, ValueError):
    """A ``--harness-tasks`` entry the installed lm-eval cannot run as asked (the message says why)."""


@dataclass(frozen=True)
class HarnessTaskRef:
    """One harness task and the n-shot asked for (None: the task's own)."""

    name: str
    num_fewshot: int | None = None


def parse_harness_tasks(text: str) -> list[HarnessTaskRef]:
    """``"hellaswag:10,boolq"`` -> refs, in order, each once.

    Raises:
        HarnessTaskError: an empty entry, an n-shot that is not an integer >= 0, a task given twice.
    """
    refs: list[HarnessTaskRef] = []
    for raw in str(text).split(","):
        item = raw.strip()
        if not item:
            raise HarnessTaskError(f"--harness-tasks {text!r}: an empty entry; give NAME[:NSHOT],... e.g. hellaswag:10,boolq")
        name, _, shot = item.partition(":")
        name = name.strip()
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
            raise HarnessTaskError(f"--harness-tasks: {name!r} is not a task name")
        num = None
        if shot.strip():
            if not shot.strip().isdigit():
                raise HarnessTaskError(f"--harness-tasks {item!r}: the n-shot after ':' must be an integer >= 0")
            num = int(shot.strip())
        if any(r.name == name for r in refs):
            raise HarnessTaskError(f"--harness-tasks: {name} is given twice")
        refs.append(HarnessTaskRef(name, num))
    return refs


@functools.lru_cache(maxsize=1)
def harness_index() -> dict[str, Any]:
    """The installed harness's task index (built once per process; about 10 to 30 s)."""
    from lm_eval.tasks import TaskManager

    return dict(TaskManager().task_index)


def _kind(entry: Any) -> str:
    return getattr(getattr(entry, "kind", None), "name", "") or ""


def expand_refs(refs: list[HarnessTaskRef], index: Mapping[str, Any] | None = None) -> list[HarnessTaskRef]:
    """Groups and tags expanded to their tasks (each with the group's n-shot), unknown names refused.

    Raises:
        HarnessTaskError: a name the installed lm-eval does not have (with a did-you-mean), one of
            InstructEval's own tasks (those go to ``--tasks``), a group with an inline task config.
    """
    index = harness_index() if index is None else index
    out: list[HarnessTaskRef] = []

    def add(name: str, shot: int | None, via: str | None) -> None:
        if name.startswith("instructeval_"):
            raise HarnessTaskError(f"--harness-tasks: {name} is an InstructEval task; give it to --tasks")
        entry = index.get(name)
        if entry is None:
            where = f" (in group {via})" if via else ""
            raise HarnessTaskError(
                f"--harness-tasks: the installed lm-eval has no task or group {name!r}{where}"
                f"{did_you_mean(name, index)}; `lm_eval ls tasks` lists them"
            )
        kind = _kind(entry)
        if kind == "TASK":
            if not any(r.name == name for r in out):
                out.append(HarnessTaskRef(name, shot))
            return
        if kind == "TAG":
            members = sorted(n for n, e in index.items() if _kind(e) == "TASK" and name in (getattr(e, "tags", None) or ()))
        elif kind == "GROUP" and getattr(entry, "yaml_path", None):
            from lm_eval.tasks._yaml_loader import load_yaml

            listed = load_yaml(Path(entry.yaml_path), resolve_func=False).get("task") or []
            members = []
            for item in listed if isinstance(listed, list) else [listed]:
                if not isinstance(item, str):
                    raise HarnessTaskError(f"--harness-tasks: group {name} defines a task inline; name its tasks instead")
                members.append(item)
        else:
            raise HarnessTaskError(f"--harness-tasks: {name!r} is a {kind.lower() or 'non-task'} entry, not a task or group")
        if not members:
            raise HarnessTaskError(f"--harness-tasks: {kind.lower()} {name} has no tasks")
        for member in members:
            add(member, shot, name)

    for ref in refs:
        add(ref.name, ref.num_fewshot, None)
    return out


def stock_task_config(name: str, index: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The harness task's config, as ``lm_eval --tasks NAME`` builds it (includes and ``!function`` resolved)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    index = harness_index() if index is None else index
    entry = index.get(name)
    if entry is None or _kind(entry) != "TASK" or not getattr(entry, "yaml_path", None):
        raise HarnessTaskError(f"--harness-tasks: {name!r} is not a YAML task of the installed lm-eval{did_you_mean(name, index)}")
    cfg = dict(load_yaml(Path(entry.yaml_path), resolve_func=True))
    cfg.pop("tag", None)
    cfg.pop("group", None)
    return cfg


def _raw(text: str) -> str:
    """``text`` as Jinja that renders to itself (the harness renders the description per document)."""
    if not any(mark in text for mark in ("{{", "{%", "{#", "}}", "%}", "#}")):
        return text
    if "endraw" in text:
        raise HarnessTaskError(f"instruction {text[:60]!r}: contains 'endraw', which cannot be escaped for the harness's Jinja")
    return "{% raw %}" + text + "{% endraw %}"


def check_placement(placement: str) -> None:
    """Refuse a placement that is not one of :data:`PLACEMENTS` (with a did-you-mean)."""
    if placement not in PLACEMENTS:
        raise HarnessTaskError(f"--placements: unknown placement {placement!r}{did_you_mean(placement, PLACEMENTS)}; "
                               f"available: {', '.join(PLACEMENTS)}")


def instructed_config(stock: Mapping[str, Any], *, name: str, instruction: str, num_fewshot: int | None,
                      metadata: Mapping[str, Any], placement: str = "description") -> dict[str, Any]:
    """The stock config with the instruction placed (see the module docstring); ``""`` keeps it as it is.

    Example:
        >>> cfg = instructed_config({"task": "t", "description": "Answer.\\n\\n", "doc_to_text": "{{q}}"},
        ...                         name="t__g", instruction="Solve it:", num_fewshot=None, metadata={})
        >>> cfg["description"]
        'Solve it:\\n\\nAnswer.\\n\\n'
    """
    check_placement(placement)
    cfg = copy.deepcopy(dict(stock))
    cfg["task"] = name
    cfg.pop("task_alias", None)
    if num_fewshot is not None:
        cfg["num_fewshot"] = num_fewshot
    own = cfg.get("description") or ""
    if instruction and placement == "description":
        cfg["description"] = _raw(instruction) + cfg.get("fewshot_delimiter", "\n\n") + own
    elif instruction and placement == "chat-system":
        # The system message is a turn of its own: no delimiter after the instruction unless the
        # task's own description follows it there.
        cfg["description"] = _raw(instruction) + (cfg.get("fewshot_delimiter", "\n\n") + own if own else "")
    # chat-user: the config keeps its description; the task object puts the instruction in the first user turn.
    cfg["metadata"] = {**(cfg.get("metadata") or {}), **dict(metadata)}
    return cfg


def build_task(config: dict[str, Any], *, data_dir: str | None, user_instruction: str = "", dataset: Any = None,
               cells: list[int] | None = None):
    """A ``ConfigurableTask`` of ``config`` reading its rows from ``data_dir`` (``local_data.yaml``) or the HF hub.

    ``cells`` (a budget): the positions, among the rows given to the harness as ``samples``, that
    this task scores. Its prompts are still built for every row, in order, and the others'
    requests dropped before the model runs: the harness draws each row's demos from one seeded
    generator in row order, so this is how a budgeted row keeps the demos it has in the full grid
    (and in the null variant, which scores every row).

    ``dataset``: the raw splits another variant of the same task already loaded (``task.dataset``),
    used instead of reading them again.

    ``user_instruction`` (the chat-user placement): put at the head of the first user turn, followed
    by the task's few-shot delimiter, when the prompt is built with a chat template.
    """
    import datasets
    from lm_eval.api.task import ConfigurableTask

    class InstructedHarnessTask(ConfigurableTask):
        _building = False

        def build_all_requests(self, *args: Any, **kwargs: Any) -> None:
            self._building = True
            try:
                super().build_all_requests(*args, **kwargs)
            finally:
                self._building = False
            if cells is not None:
                keep = set(cells)
                self._instances = [inst for inst in self._instances if inst.doc_id in keep]

        def doc_iterator(self, *args: Any, **kwargs: Any):
            rows = super().doc_iterator(*args, **kwargs)
            if cells is None or self._building:
                return rows
            keep = set(cells)
            return iter([(doc_id, doc) for doc_id, doc in rows if doc_id in keep])

        def fewshot_context(self, doc, num_fewshot, *args: Any, **kwargs: Any):
            template = kwargs.get("chat_template")
            if user_instruction and kwargs.get("apply_chat_template") and template is not None:
                kwargs["chat_template"] = first_user_turn_prefixed(template, user_instruction + self.config.fewshot_delimiter)
            return super().fewshot_context(doc, num_fewshot, *args, **kwargs)

        def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
            if dataset is not None:
                self.dataset = dataset
                return
            if data_dir:
                rows, _ = local_splits(self.config.task, self.config, data_dir,
                                       zero_shot=not int(self.config.num_fewshot or 0))
                self.dataset = datasets.DatasetDict({split: datasets.Dataset.from_list(r) for split, r in rows.items()})
                return
            try:
                super().download(dataset_kwargs, **kwargs)
            except Exception as err:  # offline, a gated dataset, a typo in the YAML: say what to do
                from .local_data import find_entry

                entry = find_entry(self.config.dataset_path, self.config.dataset_name)
                where = (f"give --data-dir DIR holding {', '.join(sorted(set(entry.files(self.config.dataset_name).values())))}"
                         if entry else "no local copy is listed for it in instructeval_tasks/harness/local_data.yaml")
                raise LocalDataError(
                    f"{self.config.task}: cannot load its dataset {self.config.dataset_path!r} "
                    f"({type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}); offline, {where}"
                ) from None

    return InstructedHarnessTask(config=config)


# How a harness task's test sample is drawn (``--harness-rows``): balanced over the gold answers, or uniform.
ROW_DESIGNS: tuple[str, ...] = ("balanced", "uniform")


def scored_ids(task: Any, test_sample: int | None, seed: int, name: str | None = None,
               rows: str = "balanced") -> list[int] | None:
    """The evaluation rows to score, ascending (None: every row): seeded; ``rows="balanced"`` balances
    them over the gold answers of a ``multiple_choice`` task (as the nine tasks' test sample),
    ``rows="uniform"`` draws them uniformly, so that the stock score estimates the whole split's
    (the leaderboard's) number; a task that is not ``multiple_choice`` is drawn uniformly either way.
    ``test_sample`` equal to the rows: every row.

    Raises:
        HarnessTaskError: a ``test_sample`` larger than the evaluation split, or one that cannot be
            balanced over its gold answers (``name``: the harness task, for the message), as the nine
            tasks refuse a test sample their eval split cannot give.
    """
    if rows not in ROW_DESIGNS:
        raise HarnessTaskError(f"{name or task.config.task}: rows={rows!r}; use one of {', '.join(ROW_DESIGNS)}")
    docs = task.eval_docs
    size = len(docs)
    if test_sample is None or test_sample == size:
        return None
    labels = None
    if rows == "balanced" and task.OUTPUT_TYPE == "multiple_choice" and test_sample < size:
        labels = [_hashable(task.doc_to_target(doc)) for doc in docs]
    try:
        return sorted(select_indices(labels, size, test_sample, seed))  # uniform: a sample larger than the rows fails
    except ValueError as err:
        raise HarnessTaskError(
            f"{name or task.config.task}: test_sample={test_sample} (--test-sample, or the profile's) cannot be drawn "
            f"from an eval split of {size} rows ({err}); use a smaller --test-sample"
        ) from None


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (int, str, float, bool)) else repr(value)
