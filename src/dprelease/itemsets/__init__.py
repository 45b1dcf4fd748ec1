"""Frequent itemsets: exact mining (custodian/evaluation), PrivBasis and TF."""

from .exact import distinct_records, kth_support, mine_frequent, top_k_itemsets

__all__ = ["distinct_records", "kth_support", "mine_frequent", "top_k_itemsets"]
