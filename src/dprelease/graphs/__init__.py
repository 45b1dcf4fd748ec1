"""Graph degree sequences under node differential privacy (RPS, Qardaji & Li, ASIACCS 2012, and its baselines)."""

from .degrees import (DECLARED_NODES, DEGREE_METHODS, DEGREE_MODELS, EDGE_LIST, DegreeRelease, cumulative_degrees,
                      hay_degrees, release_degrees, rps_degrees)
from .projection import edge_addition, node_priority
from .regenerate import regenerate_graph

__all__ = ["DEGREE_METHODS", "DEGREE_MODELS", "EDGE_LIST", "DECLARED_NODES", "DegreeRelease", "cumulative_degrees",
           "hay_degrees", "release_degrees", "rps_degrees", "edge_addition", "node_priority", "regenerate_graph"]
