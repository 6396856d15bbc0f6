"""fedsim.theory: bounds and exact expectations, no simulation.

The theorems (each in a literal and a corrected form, THEORY_SPEC.md and ``docs/theory/``):

* PersA-FL (Toghani, Lee, Uribe), Theorems 1-3: :mod:`fedsim.theory.persafl`;
* AREA (Iakovidou, Kim), Theorems 7-8: :mod:`fedsim.theory.area`;
* Per-FedAvg (Fallah, Mokhtari, Ozdaglar), Theorem 4.5: :mod:`fedsim.theory.perfedavg`;
* AsyPFL (Ma, Lu, Li, Cui), Theorems 1-2: :mod:`fedsim.theory.asypfl`;

and exact oracles (moment recursions and enumeration for FedAsync and AREA):
:mod:`fedsim.theory.oracle`, :mod:`fedsim.theory.lumped`, :mod:`fedsim.theory.lumped_mc` and
each paper's ``oracle`` module. FedAsync (Xie, Koyejo, Gupta 2019) is the asynchronous scheme
the engine is built on (PersA-FL's form of its server rule, :mod:`fedsim.servers.fedasync`);
it has no theorem here. Shared by the theorem modules: :mod:`fedsim.theory.assembly` and
:mod:`fedsim.theory.conventions`.

Public API (loaded lazily: ``import fedsim.theory`` imports neither the engine nor SimPy):

* :func:`bound` -- ``bound("theorem7", L=..., mu=..., ...)`` evaluates a theorem by name;
* :func:`get_theorem`, :func:`theorems`, :func:`register_theorem`, :class:`Theorem` -- the
  registry (plug-ins through the entry-point group ``fedsim.theorems``);
* :class:`BoundResult`, :class:`Status`, :class:`Hypothesis` -- what a bound returns.
"""

from __future__ import annotations

from fedsim.lazy import lazy_exports

_LAZY: dict[str, tuple[str, str]] = {
    "bound": ("fedsim.theory.api", "bound"),
    "get_theorem": ("fedsim.theory.registry", "get_theorem"),
    "theorems": ("fedsim.theory.registry", "theorems"),
    "register_theorem": ("fedsim.theory.registry", "register_theorem"),
    "Theorem": ("fedsim.theory.registry", "Theorem"),
    "BoundResult": ("fedsim.theory.result", "BoundResult"),
    "Status": ("fedsim.theory.result", "Status"),
    "Hypothesis": ("fedsim.theory.result", "Hypothesis"),
}

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_exports("fedsim.theory", _LAZY, globals())
