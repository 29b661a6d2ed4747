"""TSP constructive heuristics (EoH convention): task "tsp"."""

from optiforge.heuristics.tsp.construct import construct_tour
from optiforge.heuristics.tsp.instances import TSPDataset, dataset_names, get_dataset
from optiforge.heuristics.tsp.reference import (
    distance_matrix,
    held_karp,
    nearest_neighbor_tour,
    reference_tour,
    tour_length,
)
from optiforge.heuristics.tsp.task import TSPTask

__all__ = [
    "TSPDataset",
    "TSPTask",
    "construct_tour",
    "dataset_names",
    "distance_matrix",
    "get_dataset",
    "held_karp",
    "nearest_neighbor_tour",
    "reference_tour",
    "tour_length",
]
