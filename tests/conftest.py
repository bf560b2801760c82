"""Shared fixtures: seeds and canonical models."""

import numpy as np
import pytest


@pytest.fixture
def seed() -> int:
    return 20261121


@pytest.fixture
def rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


# -- canonical models, each defined once ------------------------------------------


def make_sprinkler():
    """The README's sprinkler model: Rain -> Sprinkler -> Wet <- Rain."""
    import causalnet as cn

    return cn.CausalModel({
        "Rain": cn.Categorical([0.8, 0.2], states=["no", "yes"]),
        "Sprinkler": cn.CPT(["Rain"], [[0.6, 0.4], [0.99, 0.01]], states=["off", "on"]),
        "Wet": cn.CPT(["Rain", "Sprinkler"],
                      [[[1.0, 0.0], [0.1, 0.9]], [[0.2, 0.8], [0.01, 0.99]]], states=["dry", "wet"]),
    })


def make_linear_gaussian():
    """A linear-Gaussian SCM with a confounder: Z -> X -> Y, Z -> Y."""
    import causalnet as cn

    return cn.CausalModel({
        "Z": cn.LinearGaussian([], [], bias=0.5, sigma=1.0),
        "X": cn.LinearGaussian(["Z"], [0.8], bias=0.0, sigma=0.7),
        "Y": cn.LinearGaussian(["X", "Z"], [1.5, -0.7], bias=1.0, sigma=0.5),
    })


@pytest.fixture
def sprinkler():
    return make_sprinkler()


@pytest.fixture
def asia():
    import causalnet as cn

    return cn.gallery.load("asia")


@pytest.fixture
def linear_gaussian():
    return make_linear_gaussian()


@pytest.fixture
def small_hmm():
    """A 2-state, 3-symbol categorical HMM with given parameters."""
    import causalnet as cn

    return cn.HMM(2, "categorical", n_symbols=3, startprob=[0.6, 0.4], transmat=[[0.7, 0.3], [0.2, 0.8]],
                  emissionprob=[[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])
