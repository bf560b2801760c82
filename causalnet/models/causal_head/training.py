"""Training the head: argument checks, Adam with a divergence stop, and BLAS thread limits."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping

import numpy as np

from ...errors import NumericalError

__all__ = ["adam", "check_finite_step", "small_blas"]


def adam(params: dict, names, loss_fn: Callable, rows, it, n, per_seq, batch_size, rng, betas, lr, weight_decay,
         hist, progress, callback) -> None:
    """Adam (AdamW decay on matrices) steps on `params` in place; `loss_fn(batch) -> (loss, grads, parts)`.

    Stops with :class:`NumericalError` naming the step and `lr` when the loss, a
    gradient or a parameter leaves the finite numbers (the caller restores).
    """
    b1, b2 = betas
    m1 = {k: np.zeros_like(params[k]) for k in names}
    m2 = {k: np.zeros_like(params[k]) for k in names}
    for step in it:
        if batch_size is None or batch_size >= n:
            batch = rows
        else:
            seqs = rng.choice(n, size=batch_size, replace=False)
            idx = (seqs[:, None] * per_seq + np.arange(per_seq)).reshape(-1)
            batch = tuple(a[idx] for a in rows)
        loss, grads, parts = loss_fn(batch)
        check_finite_step(step, lr, loss, grads)
        t = step + 1
        for k in names:
            gk = grads[k]
            m1[k] = b1 * m1[k] + (1 - b1) * gk
            m2[k] = b2 * m2[k] + (1 - b2) * gk * gk
            upd = lr * (m1[k] / (1 - b1 ** t)) / (np.sqrt(m2[k] / (1 - b2 ** t)) + 1e-8)
            new = params[k] - upd
            if weight_decay and new.ndim == 2:
                new = new - lr * weight_decay * params[k]
            if not np.all(np.isfinite(new)):
                raise NumericalError(f"CausalHead.fit diverged at step {step}: parameter {k!r} left the finite "
                                     f"numbers with lr={lr!r}; lower the learning rate (parameters restored to "
                                     f"before the fit)")
            params[k] = new
        hist["loss"].append(loss)
        hist["cls"].append(parts["cls"])
        hist["reg"].append(parts["reg"])
        if hasattr(it, "set_postfix"):
            it.set_postfix(loss=f"{loss:.4f}", refresh=False)
        if callback is not None and callback(step, loss, parts) is False:
            break


def check_finite_step(step: int, lr: float, loss: float, grads: Mapping) -> None:
    """NumericalError naming the step and the learning rate when a training step left the finite numbers."""
    bad = [k for k, g in grads.items() if not np.all(np.isfinite(g))]
    if np.isfinite(loss) and not bad:
        return
    what = f"the loss is {loss}" if not np.isfinite(loss) else f"the gradients of {bad} are not finite"
    raise NumericalError(f"CausalHead.fit diverged at step {step}: {what} with lr={lr!r}; lower the learning rate "
                         f"(parameters restored to before the fit)")


def small_blas(work: int):
    """One BLAS thread for small training problems (threads only contend there), when threadpoolctl exists."""
    if work < 20_000_000:
        try:
            from threadpoolctl import threadpool_limits

            return threadpool_limits(1, user_api="blas")
        except ImportError:
            pass
    return contextlib.nullcontext()
