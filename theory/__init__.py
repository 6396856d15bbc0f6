"""Bounds and exact-expectation oracles of the seed papers, with no simulation.

* PersA-FL (Toghani, Lee, Uribe): Theorems 1-3 (:mod:`fedsim.theory.persafl`);
* AREA (Iakovidou, Kim): Theorems 7-8 (:mod:`fedsim.theory.area`);
* Per-FedAvg (Fallah, Mokhtari, Ozdaglar 2020): Theorem 4.5 (:mod:`fedsim.theory.perfedavg`);
* AsyPFL (Ma, Lu, Li, Cui 2022): Theorems 1-2 (:mod:`fedsim.theory.asypfl`).

FedAsync (Xie, Koyejo, Gupta 2019) is the asynchronous scheme the engine is built on
(PersA-FL's form of its server rule, :mod:`fedsim.servers.fedasync`); it has no theorem here.
Exact oracles: :mod:`fedsim.theory.oracle`, :mod:`fedsim.theory.lumped`,
:mod:`fedsim.theory.lumped_mc` and each paper's ``oracle`` module.  Registry:
:mod:`fedsim.theory.registry`.
"""
