"""Objectives with tagged constants (THEORY_SPEC section 9)."""

from fedsim.problems.base import Problem
from fedsim.problems.constants import Constant, ConstantsTable, Tag
from fedsim.problems.quadratic import QuadraticProblem

__all__ = ["Problem", "Constant", "ConstantsTable", "Tag", "QuadraticProblem"]
