import pytest
import torch

from audit.datasets import from_arrays
from synthetic import synthetic


@pytest.fixture(autouse=True)
def _one_thread():
    # Deterministic and fast on the 2-core CI machine.
    torch.set_num_threads(1)


@pytest.fixture
def binary_data():
    return synthetic()


@pytest.fixture
def small_arrays():
    X, y = synthetic(n=1500, d=6, seed=3)
    return from_arrays(X.numpy(), y.numpy(), seed=0)
