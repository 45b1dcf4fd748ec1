"""Data layer: transaction and table types, readers/writers, taxonomies, generators."""

from .generators import clustered_baskets, kosarak_like
from .io import atomic_output, read_transactions, write_json_atomic, write_transactions, write_weighted_itemsets
from .taxonomy import ContextFreeTaxonomy
from .transactions import TransactionDB
from .universe import DERIVED_WARNING, Universe, parse_universe_spec

__all__ = [
    "TransactionDB",
    "Universe",
    "parse_universe_spec",
    "DERIVED_WARNING",
    "ContextFreeTaxonomy",
    "read_transactions",
    "write_transactions",
    "write_weighted_itemsets",
    "atomic_output",
    "write_json_atomic",
    "kosarak_like",
    "clustered_baskets",
]
