"""The Abadie-Imbens (2006) estimate and variance from matched outcomes, written loop by loop (a test oracle).

Shared by the matching tests: each computes its own matches (untied, tied, bias-adjusted) and the
conditional variances, then calls :func:`abadie_imbens`.
"""

import numpy as np


def abadie_imbens(y1, y0, t, k, m, sig, estimand):
    """``(estimate, standard error)`` of the ATE/ATT/ATC given the imputed outcomes.

    y1, y0 : (n,) outcomes with the missing arm imputed by matching; t : (n,) 0/1 treatment;
    k : (n,) how many times each unit is used as a match (tie-weighted); m : matches per unit;
    sig : (n,) the conditional variance estimate of each unit's outcome.
    """
    n = len(t)
    if estimand == "ate":
        tau = np.mean(y1 - y0)
        var = sum((y1[i] - y0[i] - tau) ** 2 + ((k[i] / m) ** 2 + (2 * m - 1) * k[i] / m ** 2) * sig[i]
                  for i in range(n)) / n ** 2
        return tau, np.sqrt(var)
    arm = 1 if estimand == "att" else 0
    own = [i for i in range(n) if t[i] == arm]
    tau = np.mean([y1[i] - y0[i] for i in own])
    var = sum((y1[i] - y0[i] - tau) ** 2 for i in own)
    var += sum(k[j] * (k[j] - 1) / m ** 2 * sig[j] for j in range(n) if t[j] != arm)
    return tau, np.sqrt(var / len(own) ** 2)
