"""fedsim: discrete-event simulation of asynchronous and personalized federated learning.

Subpackages: :mod:`fedsim.problems` (objectives with tagged constants),
:mod:`fedsim.local` and :mod:`fedsim.servers` (pure update rules),
:mod:`fedsim.engine` (SimPy processes), :mod:`fedsim.trace` (what a run records).
"""

__version__ = "0.1.0"
