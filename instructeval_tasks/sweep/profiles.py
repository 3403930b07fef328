"""Named protocol profiles of a sweep: how many demo selections, orderings, instructions, items.

========  ====  ==========  =================  =========  ====  =========  ==========  ============
profile   K     selections  orderings          perturbed  per   test       truncation  seeding
                                                          meth  items
========  ====  ==========  =================  =========  ====  =========  ==========  ============
paper     6     16          16 of demo set 0   16         5     100        none        per document
original  6     30          5 x 5 (sets 0-4)   30         5     100        100 words   original
quick     6     2           2 of demo set 0    2          2     16         50 words    per document
========  ====  ==========  =================  =========  ====  =========  ==========  ============

``paper`` follows the paper's text (Ajith et al., Sec. 4); ``original`` the released code's metric
configs (``configs/metric/*_defaults.yaml``: 30 selections, 5 demo sets x 5 cumulative orderings,
100-word truncation, one sequential perturbation stream); ``quick`` is a smoke run. Every field can
be overridden (``Profile.override``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..errors import UserError

SETTINGS = ("zero_shot", "few_shot", "perturbed", "ordering")

# The ``instructeval run`` option of each field, for error messages.
OPTION_OF = {
    "num_fewshot": "--num-fewshot", "n_selections": "--selections", "n_perturbed_selections": "--perturbed-selections",
    "n_orderings": "--orderings", "ordering_demo_seeds": "--ordering-demo-seeds", "order_mode": "--order-mode",
    "instructions_per_method": "--instructions-per-method", "instruction_seed": "--instruction-seed",
    "test_sample": "--test-sample", "test_seed": "--test-seed", "truncate_words": "--truncate-words",
    "perturbation_seed": "--perturbation-seed", "perturbation_mode": "--perturbation-mode", "settings": "--settings",
}


class ProfileError(UserError, ValueError):
    """An unknown profile, or a profile field (an override) out of range."""


def _named(field: str) -> str:
    return f"{field} ({OPTION_OF[field]})" if field in OPTION_OF else field


@dataclass(frozen=True)
class Profile:
    """The protocol knobs of a sweep (see the module table)."""

    name: str
    num_fewshot: int = 6
    n_selections: int = 16
    n_perturbed_selections: int = 16
    n_orderings: int = 16
    ordering_demo_seeds: tuple[int, ...] = (0,)
    order_mode: str = "seeded"
    instructions_per_method: int = 5
    instruction_seed: int = 0
    test_sample: int | None = 100
    test_seed: int = 0
    truncate_words: int | None = None
    perturbation_seed: int = 0
    perturbation_mode: str = "document"
    settings: tuple[str, ...] = SETTINGS
    ddof: int = 1

    def override(self, **changes: Any) -> "Profile":
        """A copy with the non-None ``changes`` applied; unknown keys are an error."""
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise ProfileError(f"unknown profile field(s) {sorted(unknown)}; known: {sorted(known)}")
        changes = {k: (tuple(v) if isinstance(v, list) else v) for k, v in changes.items() if v is not None}
        profile = replace(self, **changes)
        profile.validate()
        return profile

    def validate(self) -> None:
        bad = [s for s in self.settings if s not in SETTINGS]
        if bad or not self.settings:
            raise ProfileError(f"unknown setting(s) {bad} in --settings; known: {', '.join(SETTINGS)}" if bad
                               else f"--settings is empty; known: {', '.join(SETTINGS)}")
        if self.order_mode not in ("seeded", "original"):
            raise ProfileError(f"order_mode (--order-mode) must be 'seeded' or 'original', got {self.order_mode!r}")
        if self.perturbation_mode not in ("document", "stream"):
            raise ProfileError(f"perturbation_mode (--perturbation-mode) must be 'document' or 'stream', got {self.perturbation_mode!r}")
        for name in ("num_fewshot", "n_selections", "n_perturbed_selections", "n_orderings", "instructions_per_method"):
            if getattr(self, name) < 0:
                raise ProfileError(f"{_named(name)} must be >= 0, got {getattr(self, name)}")
        for name in ("test_sample", "truncate_words"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ProfileError(f"{_named(name)} must be >= 1 (or unset), got {value}")
        negative = [s for s in self.ordering_demo_seeds if s < 0]
        if negative:
            raise ProfileError(f"{_named('ordering_demo_seeds')} must be demo seeds >= 0, got {negative}")
        if "few_shot" in self.settings and self.num_fewshot == 0:
            raise ProfileError("few-shot settings need num_fewshot (--num-fewshot) > 0")

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ordering_demo_seeds"] = list(self.ordering_demo_seeds)
        out["settings"] = list(self.settings)
        return out


PROFILES: dict[str, Profile] = {
    "paper": Profile("paper"),
    "original": Profile(
        "original",
        n_selections=30,
        n_perturbed_selections=30,
        n_orderings=5,
        ordering_demo_seeds=(0, 1, 2, 3, 4),
        order_mode="original",
        truncate_words=100,
        perturbation_mode="stream",
    ),
    "quick": Profile(
        "quick",
        n_selections=2,
        n_perturbed_selections=2,
        n_orderings=2,
        instructions_per_method=2,
        test_sample=16,
        truncate_words=50,
    ),
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ProfileError(f"unknown profile {name!r} (--profile); known: {', '.join(PROFILES)}") from None
