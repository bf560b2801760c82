"""Transformer encoder layer speed: causalnet vs PyTorch vs plain numpy, one process.

Usage::

    python benchmarks/transformer.py            # d_model 512, 8 heads, d_ff 2048, batch 8 x 128 tokens, float32
    python benchmarks/transformer.py --quick    # smaller sizes and fewer rounds (smoke run)
    python benchmarks/transformer.py --shape 1,16,64 --rounds 300 --threads 1   # the small-tensor case (issue 15)
    python benchmarks/transformer.py --ops --threads 1      # the fused kernels alone against numpy's ops

``--shape n,T,d`` sets batch, tokens and width (heads d/16, d_ff 4d).

One post-LN encoder layer (PyTorch ``nn.TransformerEncoderLayer``, eval mode,
no dropout, no mask) with the same weights runs as:

* PyTorch, fused fast path (the default in eval mode) and the plain math path;
* a plain numpy implementation of the same layer written for speed (fused QKV
  projection, contiguous heads, in-place softmax and LayerNorm), with the
  weights as PyTorch stores them (C-ordered ``(out, in)``: ``x @ W.T`` is
  BLAS's ``NT`` product) and, as "numpy (F-order W)", Fortran-ordered (``NN``,
  as causalnet stores them);
* causalnet: ``model.forward`` (every node kept), ``model.forward(keep=...)``
  (only the output kept; intermediates freed), and an execution
  :class:`~causalnet.inference.tensor.Plan`, with the fused kernels of
  :mod:`causalnet.mechanisms.tensor.fused` (compiled before timing, as the
  default backend does after a second of plan runs) and without them.

All outputs are checked against PyTorch first. The machine is shared, so
timings are noisy: the variants run interleaved, round after round, in a
fresh random order each round (so that no variant always finds its twin's
weights in cache), and the table reports per-variant medians and the median
of the per-round ratios (each round times every variant back to back). ``--threads 1`` pins PyTorch and
BLAS to one thread, which a shared machine disturbs least.

Peak memory is measured after the timings: ``tracemalloc``'s peak during one
call, which sees every numpy allocation (so it is exact for the numpy and
causalnet variants) but not PyTorch's allocator (shown as n/a; the process's
resident set proved too coarse to attribute to one call on a shared machine).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
import tracemalloc

import numpy as np
import torch

from causalnet.inference.tensor import Plan
from causalnet.mechanisms.tensor import fused
from causalnet.models import transformer as tf


def numpy_layer(weights: dict, heads: int, eps: float = 1e-5):
    """The encoder layer in plain numpy (float32), written for speed."""
    w_in, b_in = weights["self_attn.in_proj_weight"], weights["self_attn.in_proj_bias"]
    w_out, b_out = weights["self_attn.out_proj.weight"], weights["self_attn.out_proj.bias"]
    w1, b1, w2, b2 = weights["linear1.weight"], weights["linear1.bias"], weights["linear2.weight"], weights["linear2.bias"]
    g1, c1, g2, c2 = weights["norm1.weight"], weights["norm1.bias"], weights["norm2.weight"], weights["norm2.bias"]
    d = w_out.shape[0]
    dh = d // heads
    scale = np.float32(1.0 / math.sqrt(dh))

    def layer_norm_(x, g, c):
        mu = x.mean(axis=-1, keepdims=True)
        x -= mu
        var = np.einsum("ij,ij->i", x, x)[:, None] / x.shape[-1]
        var += eps
        np.sqrt(var, out=var)
        x /= var
        x *= g
        x += c
        return x

    def run(x):
        n, t, _ = x.shape
        x2 = x.reshape(n * t, d)
        qkv = x2 @ w_in.T                                           # (n*T, 3d)
        qkv += b_in
        qkv = qkv.reshape(n, t, 3, heads, dh)
        q = np.empty((n, heads, t, dh), np.float32)
        np.multiply(qkv[:, :, 0].transpose(0, 2, 1, 3), scale, out=q)
        k = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 1, 3))
        v = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))
        s = q @ k.transpose(0, 1, 3, 2)                             # (n, h, T, T)
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        a = (s @ v).transpose(0, 2, 1, 3).reshape(n * t, d)         # (n*T, d)
        o = a @ w_out.T
        o += b_out
        o += x2
        nrm = layer_norm_(o, g1, c1)                                # N
        f = nrm @ w1.T                                              # (n*T, d_ff)
        f += b1
        np.maximum(f, 0, out=f)
        y = f @ w2.T
        y += b2
        y += nrm
        return layer_norm_(y, g2, c2).reshape(n, t, d)

    return run


def bench_ops(dtype: str, rounds: int) -> None:
    """The fused kernels alone against numpy's ops (the same op's compiled function, both backends).

    Each op's answers under the two backends are compared first (1e-5 of the
    largest value in float32, 1e-12 in float64); a difference exits with status 1.
    """
    from causalnet.mechanisms import tensor as T

    fused.compile_kernels((dtype,))
    rng = np.random.default_rng(0)

    def med(op, args, backend):
        with fused.backend(backend):
            op(*args)
            ts = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                op(*args)
                ts.append(time.perf_counter() - t0)
        return statistics.median(ts)

    tol = 1e-5 if dtype == "float32" else 1e-12

    def check(name, op, args):
        """The kernel's answer equals numpy's op's (reassociated sums: float round-off) before any time is printed."""
        with fused.backend("numba"):
            k = np.array(op(*args), dtype=np.float64)
        with fused.backend("numpy"):
            n = np.array(op(*args), dtype=np.float64)
        err = float(np.abs(k - n).max())
        if not err <= tol * max(1.0, float(np.abs(n).max())):
            raise SystemExit(f"{name}: the fused kernel differs from numpy's op by {err:g}")

    print(f"fused kernels vs numpy's ops, {dtype}, median of {rounds} calls each (numpy time / kernel time)")
    for rows, d in [(16, 64), (64, 128), (128, 256), (512, 256), (1024, 768)]:
        op = T.LayerNorm(["a", "b"], rng.random(d), rng.random(d), dtype=dtype).compiled("n")
        a, b = (rng.standard_normal((1, rows, d)).astype(dtype) for _ in range(2))
        check(f"add & LayerNorm {rows} x {d}", op, (a, b))
        k, n = med(op, (a, b), "numba"), med(op, (a, b), "numpy")
        print(f"  add & LayerNorm {rows:>5} x {d:<4} kernel {k * 1e6:8.1f} us  numpy {n * 1e6:8.1f} us  {n / k:5.2f}x")
    for t, dd, h in [(16, 64, 4), (32, 64, 4), (32, 128, 8), (64, 256, 16)]:
        op = T.AttentionWeights(["q", "k"], heads=h, dtype=dtype).compiled("n")
        q, kk = (rng.standard_normal((1, t, dd)).astype(dtype) for _ in range(2))
        used = t * t * dd <= fused.SMALL_ATTENTION_WORK
        check(f"attention weights T={t} D={dd}", op, (q, kk))
        k, n = med(op, (q, kk), "numba"), med(op, (q, kk), "numpy")
        print(f"  attention weights T={t:<3} D={dd:<4} kernel {k * 1e6:8.1f} us  numpy {n * 1e6:8.1f} us  {n / k:5.2f}x"
              f"{'' if used else '  (above SMALL_ATTENTION_WORK: numpy both times)'}")


def peak_traced(fn) -> float:
    """tracemalloc's peak during one call of fn (numpy's allocations; not PyTorch's)."""
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return float(peak)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    ap.add_argument("--rounds", type=int, default=None, help="timing rounds (default 30, quick 5)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--threads", type=int, default=None, help="threads for PyTorch and BLAS (default: as installed)")
    ap.add_argument("--shape", default=None, help="n,T,d: batch, tokens, width (heads d/16, d_ff 4d)")
    ap.add_argument("--ops", action="store_true", help="time the fused kernels alone against numpy's ops")
    args = ap.parse_args(argv)
    if args.threads:
        from threadpoolctl import threadpool_limits

        torch.set_num_threads(args.threads)
        threadpool_limits(args.threads)
    if args.ops:
        return bench_ops(args.dtype, args.rounds or 200)
    if args.quick:
        d, h, ff, n, t, rounds = 128, 4, 512, 2, 32, 5
    else:
        d, h, ff, n, t, rounds = 512, 8, 2048, 8, 128, 30
    if args.shape:
        n, t, d = (int(a) for a in args.shape.split(","))
        h, ff = max(1, d // 16), 4 * d
    rounds = args.rounds or rounds
    tdt = getattr(torch, args.dtype)
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d, h, ff, dropout=0.0, batch_first=True, dtype=tdt).eval()
    sd = {k: v.detach().numpy() for k, v in layer.state_dict().items()}
    model = tf.from_torch(layer)                      # the ordinary call: the module's own dtype is kept
    if model.spec("enc.0.n").dtype != np.dtype(args.dtype):
        raise SystemExit(f"from_torch rebuilt the {args.dtype} module in {model.spec('enc.0.n').dtype}")
    plan = Plan(model, outputs=["enc.0.n"])
    np_run = numpy_layer(sd, h)
    # the same numpy code with Fortran-ordered matrices: each W.T is C-contiguous, BLAS's NN product
    np_run_f = numpy_layer({k: np.asfortranarray(v) if v.ndim == 2 else v for k, v in sd.items()}, h)
    x = np.random.default_rng(0).standard_normal((n, t, d)).astype(args.dtype)
    xt = torch.from_numpy(x)
    compile_s = fused.compile_kernels((args.dtype,)) if fused.AVAILABLE else float("nan")

    def plan_run(backend):
        """The plan with its fused kernels (as once "auto" has compiled them), or with numpy's ops only."""
        fused.set_backend(backend if fused.AVAILABLE else "numpy")
        return plan.run({"e": x})["enc.0.n"]

    def torch_fast():
        with torch.inference_mode():
            return layer(xt).numpy()

    def torch_math():
        old = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            with torch.inference_mode():
                return layer(xt).numpy()
        finally:
            torch.backends.mha.set_fastpath_enabled(old)

    def forward(keep=None):
        """The ordinary call, with the fused kernels on (as the default backend "auto" is once it has compiled
        them: a long-running workload); its forward engine is the compiled plan (checked below)."""
        fused.set_backend("numba" if fused.AVAILABLE else "numpy")
        return model.forward({"e": x}, keep=keep)["enc.0.n"]

    variants = {
        "torch (fast path)": torch_fast,
        "torch (math path)": torch_math,
        "numpy (plain)": lambda: np_run(x),
        "numpy (F-order W)": lambda: np_run_f(x),
        "causalnet forward": forward,
        "causalnet forward keep=": lambda: forward(["enc.0.n"]),
        "causalnet Plan": lambda: plan_run("numba"),
        "causalnet Plan numpy ops": lambda: plan_run("numpy"),
    }
    ref = torch_math()
    tol = 1e-4 if args.dtype == "float32" else 1e-10
    for name, fn in variants.items():
        err = float(np.abs(fn() - ref).max())
        if not err <= tol * max(1.0, float(np.abs(ref).max())):
            raise SystemExit(f"{name} differs from PyTorch by {err:g}")
    for fn in variants.values():  # warm up
        fn()
    for keep in (None, ["enc.0.n"]):
        method = model.forward({"e": x}, keep=keep).method
        if method != "tensor plan":
            raise SystemExit(f"model.forward(keep={keep}) took the {method!r} engine, not the compiled plan")
    times = {k: [] for k in variants}
    names = list(variants)
    shuffle = np.random.default_rng(1)
    for _ in range(rounds):
        # a fresh order each round: no variant always runs right after its twin (whose weights it finds in cache)
        for i in shuffle.permutation(len(names)):
            fn = variants[names[i]]
            t0 = time.perf_counter()
            fn()
            times[names[i]].append(time.perf_counter() - t0)
    mem = {k: peak_traced(fn) for k, fn in variants.items()}
    med = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    base_t, base_np = times["torch (fast path)"], times["numpy (plain)"]
    best_torch = [min(a, b) for a, b in zip(base_t, times["torch (math path)"])]

    def ratio(name, base):
        return statistics.median(a / b for a, b in zip(times[name], base))

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"encoder layer d_model={d} heads={h} d_ff={ff}, batch {n} x {t} tokens, {args.dtype}, {rounds} rounds")
    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads), numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print("all outputs checked against PyTorch first; ratios are medians of per-round ratios")
    print(f"causalnet Plan and forward: fused numba kernels (compiled once per process and dtype in {compile_s:.2f} s; "
          f"the default backend 'auto' compiles them after {fused.AUTO_BUDGET_S:g} s of plan runs); 'numpy ops': "
          f"without them")
    print(f"causalnet forward: the ordinary call on tf.from_torch(layer) (dtype kept: {model.spec('enc.0.n').dtype}), "
          f"its forward engine 'tensor plan'; forward / numpy {ratio('causalnet forward', base_np):.2f} (time), "
          f"forward / torch {ratio('causalnet forward', base_t):.2f}, / best torch "
          f"{ratio('causalnet forward', best_torch):.2f}")
    print()
    head = f"{'variant':<26}{'median ms':>10}{'/ torch':>9}{'/ best torch':>13}{'/ numpy':>9}{'peak MB':>9}"
    print(head)
    print("-" * len(head))
    for name in variants:
        pk = "n/a" if name.startswith("torch") else f"{mem[name] / 2**20:.1f}"
        print(f"{name:<26}{med[name]:>10.{1 if med[name] >= 10 else 3}f}{ratio(name, base_t):>9.2f}{ratio(name, best_torch):>13.2f}"
              f"{ratio(name, base_np):>9.2f}{pk:>9}")
    print()
    print("/ torch: to the fast path; / best torch: to the faster PyTorch path of the same round.")
    print("peak MB: tracemalloc's peak during one call (numpy allocations; PyTorch's allocator is invisible")
    print("to it). The input and the weights are not counted.")


if __name__ == "__main__":
    main()
