"""Relational data for classification: DiffGen (KDD 2011) under eps-DP, and the TDS k-anonymity baseline."""

from .diffgen import GeneralizedTable, diffgen, epsilon_prime
from .partition import CutValue, PartitionTree, generalize, split_intervals
from .scores import info_gain, max_score
from .tds import tds

__all__ = ["GeneralizedTable", "diffgen", "epsilon_prime", "CutValue", "PartitionTree", "generalize",
           "split_intervals", "info_gain", "max_score", "tds"]
