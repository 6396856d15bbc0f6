"""The algorithm registry: one module per algorithm, one registration line each.

Each module declares an :class:`~fedsim.algorithms.base.Algorithm` (name, client rules,
execution models and their engine runners, server-rule factory, config section -- a frozen
:class:`~fedsim.algorithms.base.Section` dataclass validating itself -- and its cross-field
``check(scenario)`` hook).  To add an algorithm: write ``fedsim/algorithms/<name>.py`` and add one
``register_algorithm(...)`` line below (or call :func:`register_algorithm` from your own
code).  The engine and the config read only this registry.
"""

from fedsim.algorithms.area import AREA
from fedsim.algorithms.asfedavg import ASFEDAVG
from fedsim.algorithms.async_sgd import ASYNC_SGD
from fedsim.algorithms.asypfl import ASYPFL
from fedsim.algorithms.base import (
    Algorithm,
    Section,
    algorithms,
    get_algorithm,
    register_algorithm,
    unregister_algorithm,
)
from fedsim.algorithms.fedasync import FEDASYNC
from fedsim.algorithms.fedasync_xie import FEDASYNC_XIE
from fedsim.algorithms.fedavg import FEDAVG
from fedsim.algorithms.fedbuff import FEDBUFF
from fedsim.algorithms.picky_sgd import PICKY_SGD

__all__ = ["Algorithm", "Section", "register_algorithm", "unregister_algorithm", "get_algorithm",
           "algorithms"]

register_algorithm(FEDASYNC)
register_algorithm(FEDBUFF)
register_algorithm(AREA)
register_algorithm(FEDAVG)
register_algorithm(ASFEDAVG)
register_algorithm(ASYPFL)
register_algorithm(ASYNC_SGD)
register_algorithm(PICKY_SGD)
register_algorithm(FEDASYNC_XIE)
