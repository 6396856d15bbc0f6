"""Worst cases of fedsim's methods over whole function classes (performance estimation,
issue 32): the method in first-order form along an asynchronous schedule, the PEP solved
by cvxpy (Clarabel, SCS) with its dual certificate, the witness as a fedsim scenario, and
Lyapunov rate certificates for time-invariant schedules.

* :mod:`~fedsim.worstcase.schedule` -- who uploads at each step, what they read;
* :mod:`~fedsim.worstcase.methods`  -- delayed GD, FedAsync (Q local steps), FedBuff;
* :mod:`~fedsim.worstcase.classes`  -- interpolation conditions of the function classes;
* :mod:`~fedsim.worstcase.gram`     -- the Gram representation (points, basis);
* :mod:`~fedsim.worstcase.pep`      -- the SDP and its solve;
* :mod:`~fedsim.worstcase.witness`  -- the worst case as a fedsim problem (a quadratic);
* :mod:`~fedsim.worstcase.interpolant`, :mod:`~fedsim.worstcase.gram_witness` -- the Gram
  interpolant of a solved PEP, simulated along the schedule;
* :mod:`~fedsim.worstcase.interpolant_problem`, :mod:`~fedsim.worstcase.engine_witness` -- the
  interpolant as the fedsim problem kind ``gram_interpolant``, and its scenario (``fedsim
  run`` on the TOML ``fedsim worstcase --witness-out`` writes);
* :mod:`~fedsim.worstcase.patterns` -- delay patterns within a staleness bound;
* :mod:`~fedsim.worstcase.declare`  -- a theorem declares its method's first-order form;
* :mod:`~fedsim.worstcase.rate`     -- Lyapunov rate certificates (periodic schedules);
* :mod:`~fedsim.worstcase.door`     -- ``fedsim.worst_case(...)``;
* :mod:`~fedsim.worstcase.cli`      -- ``fedsim worstcase``.

Importing this package does not import cvxpy (the solve does).
"""

from fedsim.worstcase.classes import FunctionClass
from fedsim.worstcase.declare import FirstOrderForm, register_first_order
from fedsim.worstcase.door import WorstCase, worst_case
from fedsim.worstcase.methods import DelayAdaptive, FedAsync, FedBuff, delayed_gd
from fedsim.worstcase.pep import solve_pep
from fedsim.worstcase.schedule import Contribution, Schedule

__all__ = ["FunctionClass", "FirstOrderForm", "register_first_order", "WorstCase", "worst_case",
           "FedAsync", "FedBuff", "DelayAdaptive", "delayed_gd",
           "solve_pep", "Contribution", "Schedule"]
