"""Random streams, their one home: one root seed becomes named, independent child streams.

This package derives every stream and draws every client's delays:

* here -- the derivation below (:class:`Streams`, :func:`stream`);
* :mod:`fedsim.rng.seeding` -- the same derivation for many ``(replicate, owner)`` pairs at
  once (the ``SeedSequence`` hash vectorised) and lean bit generators;
* :mod:`fedsim.rng.streams` -- the streams as PCG64 state rows drawn from compiled code;
* :mod:`fedsim.rng.delays` -- every client's delay draws, in the engine's block order.

Derivation (reproducible from ``(seed, replicate)`` alone)::

    root       = SeedSequence(seed)
    replicate  = SeedSequence(seed, spawn_key=(replicate,))   # == root.spawn(r+1)[r]
    client i   = SeedSequence(seed, spawn_key=(replicate, i))
    purpose p  = SeedSequence(seed, spawn_key=(replicate, i, PURPOSES[p]))
    server     = SeedSequence(seed, spawn_key=(replicate, SERVER, PURPOSES[p]))

where ``SERVER = 2**31`` (a client index no run will reach) and ``PURPOSES``
maps ``delays -> 0, noise -> 1, sampling -> 2, timer -> 3, events -> 4,
init -> 5``.  Building the spawn key explicitly (instead of calling
``spawn`` repeatedly, which is stateful) means a stream does not depend on
how many other streams were created before it, nor on the worker that
creates it: the same ``(seed, replicate, client, purpose)`` always yields
the same bits.  Generators are ``numpy.random.Generator(PCG64(...))``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedsim.errors import require

__all__ = ["PURPOSES", "SERVER", "Streams", "replicate_seedseq", "stream"]

PURPOSES: dict[str, int] = {
    "delays": 0,
    "noise": 1,
    "sampling": 2,
    "timer": 3,
    "events": 4,
    "init": 5,
}
SERVER: int = 2**31


def _check(seed: int, replicate: int) -> None:
    require(isinstance(seed, (int, np.integer)) and seed >= 0, "seed", seed,
            "must be a non-negative integer")
    require(isinstance(replicate, (int, np.integer)) and replicate >= 0, "replicate",
            replicate, "must be a non-negative integer")


def replicate_seedseq(seed: int, replicate: int) -> np.random.SeedSequence:
    """The SeedSequence of one replicate; equal to ``SeedSequence(seed).spawn(r+1)[r]``."""
    _check(seed, replicate)
    return np.random.SeedSequence(int(seed), spawn_key=(int(replicate),))


def stream(seed: int, replicate: int, owner: int | str, purpose: str) -> np.random.Generator:
    """The generator for ``owner`` (a client index or ``"server"``) and ``purpose``."""
    _check(seed, replicate)
    require(purpose in PURPOSES, "purpose", purpose, f"must be one of {sorted(PURPOSES)}")
    if owner == "server":
        idx = SERVER
    else:
        require(isinstance(owner, (int, np.integer)) and 0 <= owner < SERVER, "owner", owner,
                "must be a client index >= 0 or 'server'")
        idx = int(owner)
    ss = np.random.SeedSequence(int(seed), spawn_key=(int(replicate), idx, PURPOSES[purpose]))
    return np.random.Generator(np.random.PCG64(ss))


@dataclass(frozen=True)
class Streams:
    """All named streams of one replicate; ``Streams(seed, r).client(i, "noise")``."""

    seed: int
    replicate: int = 0

    def __post_init__(self) -> None:
        _check(self.seed, self.replicate)

    def client(self, i: int, purpose: str) -> np.random.Generator:
        """Stream of client ``i`` for ``purpose``."""
        return stream(self.seed, self.replicate, i, purpose)

    def server(self, purpose: str) -> np.random.Generator:
        """Stream of the server for ``purpose`` (e.g. ``"timer"``, ``"events"``)."""
        return stream(self.seed, self.replicate, "server", purpose)
