"""Online bin packing (FunSearch semantics): task "binpacking"."""

from optiforge.heuristics.binpacking.datasets import BinPackingDataset, dataset_names, get_dataset
from optiforge.heuristics.binpacking.simulate import check_assignment, count_bins, online_pack
from optiforge.heuristics.binpacking.task import BinPackingTask

__all__ = [
    "BinPackingDataset",
    "BinPackingTask",
    "check_assignment",
    "count_bins",
    "dataset_names",
    "get_dataset",
    "online_pack",
]
