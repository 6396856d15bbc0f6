"""Compatibility: ``physical_staleness_bound`` moved to :mod:`fedsim.engine.staleness`
(public as ``fedsim.engine.physical_staleness_bound``); import it from there."""

from fedsim.engine.staleness import physical_staleness_bound

__all__ = ["physical_staleness_bound"]
