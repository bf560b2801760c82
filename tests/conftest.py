"""Shared fixtures: seeds and canonical models."""

import numpy as np
import pytest


@pytest.fixture
def seed() -> int:
    return 20261121


@pytest.fixture
def rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)
