"""What a sweep plans, resumes, evaluates and saves, whatever its kind.

A ``Job`` is one result of the sweep under its name: a variant of the nine tasks
(``plan.Variant``), a harness task's variant (``harness_runs.HarnessVariant``) or a stock run
(``leaderboard.StockRun``). Each carries its own task metadata, whose ``variant_fingerprint``
(``fingerprint``) is what a resumed sweep compares with the saved results of the same name.

A ``Chunk`` is what an executor evaluates in one go and the store saves as one results file: the
pending variants of one (task, instruction) (``chunk.ChunkJob``) or of one harness task
(``harness_runs.HarnessJob``).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence


class Job(Protocol):
    """One named result of a sweep, with its task metadata (fingerprint included)."""

    @property
    def name(self) -> str: ...

    @property
    def metadata(self) -> dict[str, Any]: ...

    @property
    def fingerprint(self) -> str: ...


class Chunk(Protocol):
    """Jobs evaluated together and saved as one results file (``key`` names it)."""

    key: str
    poolable: bool  # may share a harness call with other chunks of the same kind (``chunk.pool_key``)

    @property
    def variants(self) -> Sequence[Any]: ...

    @property
    def names(self) -> list[str]: ...

    @property
    def metadata(self) -> dict[str, dict[str, Any]]: ...

    def restricted(self, variants: list[Any]) -> "Chunk":
        """The same chunk for ``variants`` only (those still missing after another process saved some)."""

    def evaluate(self, lm: Any, spec: Any, profile: Any, bases: dict[str, dict[str, Any]], *, log_samples: bool,
                 on_variant: Callable[[Any, dict[str, Any], float], None] | None = None
                 ) -> tuple[dict[str, Any], dict[str, list[dict]]]:
        """``(results, samples)`` of the chunk's harness call(s) (``chunk.evaluate_job`` adds the model settings)."""


class ChunkOfVariants:
    """What every chunk kind shares: its variants' names and metadata, read from ``variants``."""

    variants: Sequence[Any]

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.variants]

    @property
    def metadata(self) -> dict[str, dict[str, Any]]:
        return {v.name: v.metadata for v in self.variants}
