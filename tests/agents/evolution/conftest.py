import pytest
from evo_helpers import TinyBinPacking


@pytest.fixture
def task() -> TinyBinPacking:
    return TinyBinPacking()
