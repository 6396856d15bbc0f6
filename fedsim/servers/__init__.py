"""Server update rules (pure NumPy, no SimPy): one module per algorithm, one shape.

Every rule has ``init(w0) -> state`` and ``apply(state, uploads) -> (state, diagnostics)``
(:mod:`fedsim.servers.base`, FedJAX style):

* :mod:`fedsim.servers.fedasync` -- [P] Algorithm 1 line 4, ``w <- w - beta Delta``;
* :mod:`fedsim.servers.fedbuff`  -- buffered asynchronous aggregation (FedBuff);
* :mod:`fedsim.servers.asfedavg` -- asynchronous FedAvg of [A]'s experiments;
  (both on :class:`fedsim.servers.buffer.BufferedAverage`);
* :mod:`fedsim.servers.area`     -- [A] Algorithm 1 (aggregator ``u_s``, global counter k)
  and its step-size schedules (constant, ``c/(k+d)``, Theorem 7);
* :mod:`fedsim.servers.fedavg`   -- synchronous FedAvg (average of the sampled models);
* :mod:`fedsim.servers.asypfl`   -- AsyPFL eq. (4) and Algorithm 1's pi_k / E_k.
"""

from fedsim.servers.area import AreaRule, AreaServer, StepSizes, theorem7_step_sizes
from fedsim.servers.asfedavg import ASFedAvgServer
from fedsim.servers.asypfl import (
    AsyPFLServer,
    AsyPFLServerRule,
    AsyPFLState,
    asypfl_apply,
    client_weights,
)
from fedsim.servers.base import ServerRule, Upload, model_of
from fedsim.servers.buffer import BufferedAverage
from fedsim.servers.fedasync import FedAsyncRule, fedasync_apply
from fedsim.servers.fedavg import FedAvgRule, fedavg_step
from fedsim.servers.fedbuff import FedBuffServer, staleness_weight

__all__ = ["fedasync_apply", "FedAsyncRule", "FedBuffServer", "staleness_weight",
           "BufferedAverage", "AreaServer", "AreaRule", "StepSizes", "theorem7_step_sizes",
           "fedavg_step", "FedAvgRule", "ASFedAvgServer", "AsyPFLServer",
           "AsyPFLServerRule", "AsyPFLState", "asypfl_apply", "client_weights",
           "ServerRule", "Upload", "model_of"]
