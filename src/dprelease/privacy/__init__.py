"""The one package through which every data-dependent value leaves an algorithm."""

from .accountant import BudgetAccountant, BudgetScope, LedgerEntry, check_epsilon
from .mechanisms import (
    ThresholdRelease,
    discrete_laplace_tail,
    exponential_mechanism,
    exponential_mechanism_disjoint,
    exponential_top_k,
    exponential_top_k_implicit,
    laplace_top_k_implicit,
    noisy_counts,
    noisy_values,
    threshold_counts,
    uniform_choice,
    zero_cell_threshold,
)
from .noise import NoiseSource, SecureNoise, SeededNoise, make_noise

__all__ = [
    "BudgetAccountant",
    "BudgetScope",
    "LedgerEntry",
    "check_epsilon",
    "NoiseSource",
    "SecureNoise",
    "SeededNoise",
    "make_noise",
    "ThresholdRelease",
    "discrete_laplace_tail",
    "exponential_mechanism",
    "exponential_mechanism_disjoint",
    "exponential_top_k",
    "exponential_top_k_implicit",
    "laplace_top_k_implicit",
    "noisy_counts",
    "noisy_values",
    "threshold_counts",
    "uniform_choice",
    "zero_cell_threshold",
]
