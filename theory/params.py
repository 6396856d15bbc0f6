"""Parameter kinds of the theorem evaluators, read by ``fedsim bounds`` from the signatures.

A theorem function annotates each keyword argument; :mod:`fedsim.theory.cli` turns the annotation
into a command-line option (THEORY_SPEC 1.4):

* ``float`` -- a number (``inf`` accepted; the evaluator says whether it may be infinite);
* ``int`` -- an integer (``1.5`` is a usage error);
* ``bool`` -- a flag (``--paper-literal``);
* ``str`` -- free text checked by the evaluator; ``Literal[...]`` -- a fixed choice;
* :data:`Vector` -- a comma list of numbers, always a list (``--p 0.3,0.3``);
* :data:`Horizons` -- a number or a comma list of numbers (a curve over T);
* :data:`Iterations` -- an integer or a comma list of integers (a curve over K).

The aliases are plain ``typing.Annotated`` types: a theorem from a plug-in package can use
them too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

__all__ = ["Vector", "Horizons", "Iterations", "KIND_VECTOR", "KIND_HORIZONS",
           "KIND_ITERATIONS", "kind_of"]

KIND_VECTOR = "fedsim:vector"
KIND_HORIZONS = "fedsim:horizons"
KIND_ITERATIONS = "fedsim:iterations"

#: a comma list of numbers (always a list)
Vector = Annotated[Sequence[float], KIND_VECTOR]
#: a number or an array of numbers (a curve over the horizon T)
Horizons = Annotated[Any, KIND_HORIZONS]
#: an integer or an array of integers (a curve over the iteration count K)
Iterations = Annotated[Any, KIND_ITERATIONS]


def kind_of(annotation: Any) -> str | None:
    """The fedsim kind carried by an ``Annotated`` alias (or ``X | None`` of one), else None."""
    meta = getattr(annotation, "__metadata__", None)
    if meta:
        return next((m for m in meta if isinstance(m, str) and m.startswith("fedsim:")), None)
    for arg in getattr(annotation, "__args__", ()) or ():
        k = kind_of(arg)
        if k is not None:
            return k
    return None
