"""LSTM forward speed: causalnet vs PyTorch CPU, one process, same weights and inputs.

Usage::

    python benchmarks/recurrent.py              # batch 32, T 128, hidden 256 (input 256), 2 layers
    python benchmarks/recurrent.py --quick      # smaller sizes, fewer rounds (smoke run)

Variants, each checked against PyTorch first:

* ``torch``: ``nn.LSTM`` (eval, ``no_grad``), CPU;
* ``run``: :func:`causalnet.models.recurrent.run`, the fused loop: input
  projections a block of steps per matmul, one matmul per step for all four
  gates (``W_hh @ h`` feature-major in float32, ``h @ W_hh^T`` time-major in
  float64), then one compiled (numba) pass for the gates and the cell update;
* ``forward``: ``model.forward(values)``, the ordinary call (every node's
  value available in the trace), then the last layer's states stacked
  ``(n, T, H)``: its forward engine runs the same loop as ``run``
  (``trace.method == "recurrent loop"``, checked);
* ``forward keep=``: ``model.forward(values, keep=outputs)``;
* ``node by node`` (``--generic``): the reference run, the generic DAG execution
  node by node (about ``9 T layers`` nodes).

The model is ``recurrent.from_torch(module, T)`` with no ``dtype``: it keeps
the module's (checked).

BLAS and PyTorch are pinned to one thread (set before numpy is imported) and
times are CPU time (``time.process_time``): the machine is shared. Variants
run interleaved, round after round; the table reports per-variant medians and
the median per-round ratio ``causalnet / torch`` (goal: ``forward`` <= 1.3, issue 30).
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from causalnet.models import recurrent  # noqa: E402


def _timed(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def bench(dtype: str, n: int, T: int, H: int, layers: int, rounds: int, generic: bool) -> dict:
    torch.set_num_threads(1)
    tdt = getattr(torch, dtype)
    torch.manual_seed(0)
    mod = torch.nn.LSTM(H, H, num_layers=layers, batch_first=True, dtype=tdt).eval()
    model = recurrent.from_torch(mod, T)                 # the ordinary call: the module's dtype is kept
    if model.spec("l0.h[0]").dtype != np.dtype(dtype):
        raise SystemExit(f"from_torch rebuilt the {dtype} LSTM in {model.spec('l0.h[0]').dtype}")
    x = np.random.default_rng(0).standard_normal((n, T, H)).astype(dtype)
    xt = torch.from_numpy(x)
    values = {f"x[{t}]": x[:, t] for t in range(T)}
    keep = [f"l{layers - 1}.h[{t}]" for t in range(T)]

    def torch_fwd():
        with torch.no_grad():
            return mod(xt)[0]

    def torch_gemm():
        """PyTorch without oneDNN: its LSTM as per-step GEMMs, the same algorithm as `run`."""
        with torch.no_grad(), torch.backends.mkldnn.flags(enabled=False):
            return mod(xt)[0]

    def run():
        return recurrent.run(model, x).output

    def forward():
        tr = model.forward(values)
        return np.stack([tr[k] for k in keep], axis=1)

    def forward_keep():
        tr = model.forward(values, keep=keep)
        return np.stack([tr[k] for k in keep], axis=1)

    def node_by_node():
        tr = model._forward_nodes(values, None, None, None, keep)
        return np.stack([tr[k] for k in keep], axis=1)

    method = model.forward(values).method
    if method != "recurrent loop":
        raise SystemExit(f"model.forward took the {method!r} engine, not the recurrent loop")

    want = torch_fwd().numpy()
    tol = 1e-10 if dtype == "float64" else 1e-4
    variants = {"torch": torch_fwd, "torch-gemm": torch_gemm, "run": run, "forward": forward,
                "forward keep=": forward_keep}
    if generic:
        variants["node by node"] = node_by_node
    for name, fn in variants.items():
        got = fn()
        got = got.numpy() if hasattr(got, "numpy") else got
        err = float(np.abs(got - want).max())
        if err > tol:
            raise SystemExit(f"{name} ({dtype}) differs from torch by {err:.2e}")
    times = {k: [] for k in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            times[name].append(_timed(fn))
    ratios = {k: statistics.median(a / b for a, b in zip(times[k], times["torch"])) for k in variants if k != "torch"}
    return {"median": {k: statistics.median(v) for k, v in times.items()}, "ratio": ratios}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--generic", action="store_true", help="also time the node-by-node reference run")
    ap.add_argument("--no-generic", action="store_true", help="the default (kept for the commands in the docs)")
    args = ap.parse_args()
    n, T, H, layers = (8, 32, 64, 2) if args.quick else (32, 128, 256, 2)
    rounds = args.rounds or (3 if args.quick else 7)
    print(f"LSTM forward: batch {n}, T {T}, hidden {H} (input {H}), {layers} layers; 1 thread, CPU seconds, "
          f"median of {rounds} rounds; load {os.getloadavg()[0]:.1f}")
    print("torch: PyTorch's default CPU LSTM (oneDNN's fused RNN primitive in float32); torch-gemm: oneDNN off, "
          "per-step GEMMs like `run`")
    print("every variant's output checked against torch first; ratios: medians of per-round ratios to torch")
    names = ["torch", "torch-gemm", "run", "forward", "forward keep=", "node by node"]
    print(f"{'dtype':8}" + "".join(f"{k:>14}" for k in names) + "   |" + "".join(f"{k + '/torch':>20}" for k in names[1:]))
    for dtype in ("float32", "float64"):
        r = bench(dtype, n, T, H, layers, rounds, args.generic)
        med, rat = r["median"], r["ratio"]
        print(f"{dtype:8}" + "".join(f"{med[k]:14.4f}" if k in med else f"{'-':>14}" for k in names) + "   |"
              + "".join(f"{rat[k]:19.2f}x" if k in rat else f"{'-':>20}" for k in names[1:]))
    print("ordinary call: model.forward(values) after recurrent.from_torch(module, T); goal forward/torch <= 1.3")


if __name__ == "__main__":
    main()
