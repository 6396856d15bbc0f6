"""The two table -> replay paths the audits run on a hand-made problem (no shim).

``model_path``: the scenario's model writes the table with the writer its own rule
chooses (``fedsim.engine.dispatch.replay_tables``, what ``run`` does on the scenario's
problem); ``simpy_path``: the asynchronous physical model's SimPy reference writer
(:class:`~fedsim.engine.models.physical.simpy_writer.AsyncRun`) writes it.  Either way the
one replay applies the rules.
"""

from __future__ import annotations

from typing import Any

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine.batch import diagnose
from fedsim.engine.dispatch import replay_tables
from fedsim.engine.models.physical.simpy_writer import AsyncRun
from fedsim.engine.replay.driver import replay_table
from fedsim.rng import Streams
from fedsim.trace import Trace

__all__ = ["model_path", "simpy_path"]


def model_path(sc: Scenario, problem: Any, replicate: int = 0, *,
               diagnostics: bool = False) -> Trace:
    """Replicate ``replicate`` of ``sc`` on ``problem``: the model's table, replayed
    (``diagnostics``: with the model's diagnostics, as ``run_batch`` adds them)."""
    tr = replay_tables(sc, problem, [replicate])[0]
    if diagnostics:
        diagnose(sc, problem, [replicate], [tr])
    return tr


def simpy_path(sc: Scenario, problem: Any, replicate: int = 0) -> Trace:
    """The same through SimPy's table (asynchronous physical model)."""
    spec = get_algorithm(sc.algorithm.name)
    table = AsyncRun(sc, problem, Streams(sc.seed, replicate), False, spec).table()
    return replay_table(sc, [table], replicates=[replicate], problem=problem)[0]
