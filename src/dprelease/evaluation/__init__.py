"""The papers' utility metrics."""

from .counting import SupportCounter, Workload, evaluate_counting, make_workload, relative_errors
from .occurrence import occurrence_share
from .topk import topk_utility, topk_utility_many

__all__ = ["SupportCounter", "Workload", "evaluate_counting", "make_workload", "relative_errors", "topk_utility",
           "topk_utility_many", "occurrence_share"]
