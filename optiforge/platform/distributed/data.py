"""The data sets of ``optiforge train``: scikit-learn's bundled digits and a synthetic task."""

from __future__ import annotations

import numpy as np

from optiforge import validation as check
from optiforge.optim.distributed import Dataset, synthetic_classification

DATASETS = ("digits", "synthetic")


def load_digits_dataset(seed: int = 0, test_size: float = 0.2) -> Dataset:
    """scikit-learn's bundled 8x8 digits (1,797 images, 10 classes; no download), pixels scaled
    to [0, 1], split stratified into train and test (``test_size``) with ``seed``."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y.astype(np.int64), test_size=test_size,
                                              random_state=seed, stratify=y)
    return Dataset("digits", x_tr, y_tr, x_te, y_te, 10)


def load_dataset(name: str, seed: int = 0) -> Dataset:
    """The data set called ``name`` (``digits`` or ``synthetic``)."""
    check.choice(name, "data", DATASETS)
    if name == "digits":
        return load_digits_dataset(seed)
    return synthetic_classification(seed=seed)
