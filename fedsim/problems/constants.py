"""Tagged constants: every number a problem reports says what kind of number it is.

THEORY_SPEC section 9: each constant is a value plus a tag

* ``EXACT``    -- equal to the supremum/infimum the assumption asks for;
* ``UPPER``    -- a valid (possibly loose) upper bound;
* ``NUMERIC``  -- solved numerically to a stated tolerance;
* ``INFINITE`` -- the assumption fails globally (value is ``+inf``);

and a one-line reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from fedsim.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Tag", "Constant", "ConstantsTable"]


class Tag(StrEnum):
    """What kind of number a constant is (THEORY_SPEC section 9)."""

    EXACT = "EXACT"
    UPPER = "UPPER"
    NUMERIC = "NUMERIC"
    INFINITE = "INFINITE"


@dataclass(frozen=True)
class Constant:
    """One tagged constant: ``value``, ``tag`` and a one-line ``reason``."""

    name: str
    value: float
    tag: Tag
    reason: str

    def __post_init__(self) -> None:
        v = float(self.value)
        object.__setattr__(self, "value", v)
        object.__setattr__(self, "tag", Tag(self.tag))
        if math.isnan(v):
            raise ConfigError(f"constant {self.name} must not be NaN, got {self.name}=nan")
        if self.tag is Tag.INFINITE and not math.isinf(v):
            raise ConfigError(f"constant {self.name} tagged INFINITE must be inf, got {v}")
        if math.isinf(v) and self.tag is not Tag.INFINITE:
            raise ConfigError(f"constant {self.name}=inf must be tagged INFINITE, got {self.tag}")

    def __float__(self) -> float:
        return self.value


class ConstantsTable(Mapping[str, Constant]):
    """An ordered, read-only name -> :class:`Constant` mapping.

    ``table["L"].value`` is the number, ``table.value("L")`` a shortcut,
    ``table.to_frame()`` a DataFrame with columns ``name, value, tag, reason``.
    """

    def __init__(self, constants: list[Constant] | tuple[Constant, ...] = ()) -> None:
        self._d: dict[str, Constant] = {}
        for c in constants:
            if c.name in self._d:
                raise ConfigError(f"duplicate constant name {c.name!r}")
            self._d[c.name] = c

    def __getitem__(self, key: str) -> Constant:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def value(self, name: str) -> float:
        """The float value of constant ``name``."""
        return self._d[name].value

    def values(self) -> dict[str, float]:  # type: ignore[override]
        """name -> float."""
        return {k: c.value for k, c in self._d.items()}

    def to_frame(self) -> pd.DataFrame:
        """The table as a DataFrame (columns name, value, tag, reason)."""
        import pandas as pd  # imported where used: start-up time (issue 19)

        return pd.DataFrame(
            [(c.name, c.value, c.tag.value, c.reason) for c in self._d.values()],
            columns=["name", "value", "tag", "reason"],
        )

    def __repr__(self) -> str:
        return self.to_frame().to_string(index=False)
