"""Server update rules (pure NumPy, no SimPy): one module per algorithm.

* :mod:`fedsim.servers.fedasync` -- [P] Algorithm 1 line 4, ``w <- w - beta Delta``;
* :mod:`fedsim.servers.fedbuff`  -- buffered asynchronous aggregation (FedBuff);
* :mod:`fedsim.servers.area`     -- [A] Algorithm 1 (aggregator ``u_s``, global counter k)
  and its step-size schedules;
* :mod:`fedsim.servers.fedavg`   -- synchronous FedAvg (average of the sampled models);
* :mod:`fedsim.servers.asfedavg` -- asynchronous FedAvg of [A]'s experiments;
* :mod:`fedsim.servers.asypfl`   -- AsyPFL eq. (4) and Algorithm 1's pi_k / E_k.
"""

from fedsim.servers.area import AreaServer, StepSizes
from fedsim.servers.asfedavg import ASFedAvgServer
from fedsim.servers.asypfl import AsyPFLServer, asypfl_apply, client_weights
from fedsim.servers.fedasync import fedasync_apply
from fedsim.servers.fedavg import fedavg_aggregate
from fedsim.servers.fedbuff import FedBuffServer, staleness_weight

__all__ = ["fedasync_apply", "FedBuffServer", "staleness_weight", "AreaServer", "StepSizes",
           "fedavg_aggregate", "ASFedAvgServer", "AsyPFLServer", "asypfl_apply",
           "client_weights"]
