"""The head's loss and its analytic gradients: OvR binary cross-entropy plus the gated Cauchy NLL.

Stable for every finite input: ``log(1 + r^2)`` and its derivatives are
evaluated without overflow for huge residuals.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .outputs import softplus

__all__ = ["head_loss", "log1p_sq", "LOG_PI"]

LOG_PI = float(np.log(np.pi))


def log1p_sq(r: np.ndarray) -> np.ndarray:
    """``log(1 + r**2)`` without overflow for huge ``|r|``."""
    a = np.abs(r)
    big = a > 1e150
    if not big.any():
        return np.log1p(r * r)
    small = np.where(big, 0.0, r)
    return np.where(big, 2.0 * np.log(np.where(big, a, 1.0)), np.log1p(small * small))


def head_loss(p: Mapping, abs_W: np.ndarray, abs_w: np.ndarray, z, lab, y, mask, num, *, num_id: int, alpha: float,
              lam: float, detach_gate: bool, grad: bool):
    """Total loss, gradients (name -> array, or None when not `grad`) and loss parts on flattened rows.

    Rows are ``z (N, H)``, labels ``lab (N,)``, targets ``y (N,)``, ``mask`` and ``num`` ``(N,)`` bool;
    `p` holds the head's parameters and ``abs_W``/``abs_w`` are ``|W_cls|`` and ``|W_reg|``.
    """
    from scipy.special import expit  # loaded on first use, not by ``import causalnet``
    N = z.shape[0]
    V = p["W_cls"].shape[0]
    n_cls = max(int(mask.sum()), 1)
    n_num = int(num.sum())
    aW, aw = abs_W, abs_w
    absb = np.abs(p["b_noise"])
    locU = z @ p["W_loc"].T + p["b_loc"]                             # (N, C)
    pre = z @ p["W_scale"].T + p["b_scale"]                          # (N, C)
    g = softplus(pre) + absb                                         # (N, C) scale of U'
    locS = locU @ p["W_cls"].T + p["b_cls"]                          # (N, V)
    sS = g @ aW.T                                                    # (N, V)
    delta = locS - p["thresholds"]                                   # (N, V)
    P = np.arctan2(sS, -delta) / np.pi                               # (N, V) P(S > C)
    Q = np.arctan2(sS, delta) / np.pi                                # (N, V) 1 - P
    onehot = np.zeros((N, V), dtype=bool)
    onehot[np.arange(N), lab] = True
    tiny = np.finfo(np.float64).tiny
    bce = -np.where(onehot, np.log(np.maximum(P, tiny)), np.log(np.maximum(Q, tiny)))   # (N, V)
    wc = mask / n_cls                                                # (N,)
    cls_loss = float(bce.sum(axis=1) @ wc)
    locY = locU @ p["W_reg"] + p["b_reg"]                            # (N,)
    sY = g @ aw                                                      # (N,)
    r = (y - locY) / sY
    nll = LOG_PI + np.log(sY) + log1p_sq(r)                         # (N,)
    Pn = P[:, num_id]
    gate = num * (alpha + (1.0 - alpha) * Pn)              # (N,)
    reg_loss = float(gate @ nll) / n_num if n_num else 0.0
    total = cls_loss + lam * reg_loss
    parts = {"cls": cls_loss, "reg": reg_loss, "n_cls": int(mask.sum()), "n_num": n_num}
    if not grad:
        return total, None, parts
    # d total / d P: BCE terms, and the gate through P_<NUM>
    dP = np.where(onehot, -1.0 / np.maximum(P, tiny), 1.0 / np.maximum(Q, tiny)) * wc[:, None]   # (N, V)
    wr = lam / n_num if n_num else 0.0
    if not detach_gate:
        dP[:, num_id] += wr * (1.0 - alpha) * num * nll
    den = np.pi * (sS * sS + delta * delta)                          # (N, V)
    g_locS = dP * (sS / den)                                         # (N, V)
    g_sS = dP * (-delta / den)                                       # (N, V)
    # regression
    with np.errstate(over="ignore"):
        inv_q = 1.0 / (1.0 + r * r)                                  # (N,) 0 where r*r overflows
    g_locY = wr * gate * (-2.0 * r * inv_q / sY)                     # (N,)
    g_sY = wr * gate * ((2.0 * inv_q - 1.0) / sY)                    # (N,) (1 - r^2) / (1 + r^2)
    grads = {
        "W_cls": g_locS.T @ locU + (g_sS.T @ g) * np.sign(p["W_cls"]),
        "b_cls": g_locS.sum(axis=0),
        "thresholds": -g_locS.sum(axis=0),
        "W_reg": g_locY @ locU + (g_sY @ g) * np.sign(p["W_reg"]),
        "b_reg": np.asarray(g_locY.sum()),
    }
    g_locU = g_locS @ p["W_cls"] + g_locY[:, None] * p["W_reg"]     # (N, C)
    g_g = g_sS @ aW + g_sY[:, None] * aw                             # (N, C)
    grads["b_noise"] = g_g.sum(axis=0) * np.sign(p["b_noise"])
    g_pre = g_g * expit(pre)                                         # (N, C)
    grads["W_scale"] = g_pre.T @ z
    grads["b_scale"] = g_pre.sum(axis=0)
    grads["W_loc"] = g_locU.T @ z
    grads["b_loc"] = g_locU.sum(axis=0)
    return total, grads, parts
