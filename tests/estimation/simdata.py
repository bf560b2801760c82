"""Shared data for the estimation tests: simulated from causalnet models with known effects (fixtures in each test module)."""

import numpy as np
import pandas as pd
from scipy import stats

import causalnet as cn


def confounded_model(effect=2.0, binary_outcome=False):
    """Z -> T* -> T -> Y, Z -> Y: T = 1{Z + logistic noise > 0}; Y = effect T + Z + noise (ATE = effect)."""
    mechs = {
        "Z": cn.Function([], lambda: 0.0, noise=stats.norm(0, 1)),
        "Tstar": cn.Function(["Z"], lambda z: 0.8 * z, noise=stats.logistic()),
        "T": cn.Function(["Tstar"], lambda s: (s > 0).astype(float)),
        "Y": cn.Function(["T", "Z"], lambda t, z: effect * t + z, noise=stats.norm(0, 1)),
    }
    return cn.CausalModel(mechs)


def simulate(n, seed, effect=2.0, k=3):
    """A frame with covariates Z0..Z{k-1}, binary T (logistic in Z) and linear Y: ATE = effect."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k))
    t = (rng.random(n) < 1 / (1 + np.exp(-(z @ np.linspace(0.5, -0.5, k) + 0.2)))).astype(int)
    y = effect * t + z @ np.linspace(1.0, 2.0, k) + 0.5 * t * z[:, 0] + rng.normal(size=n)
    frame = pd.DataFrame(z, columns=[f"Z{i}" for i in range(k)]).assign(T=t, Y=y)
    return frame


def graph_for(k=3):
    return cn.DAG([(f"Z{i}", "T") for i in range(k)] + [(f"Z{i}", "Y") for i in range(k)] + [("T", "Y")])
