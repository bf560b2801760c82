"""BERT-base forward: causalnet (from_huggingface) vs the transformers package on PyTorch, one process.

Usage::

    python benchmarks/bert.py                      # 12 layers, d 768, 12 heads, ffn 3072; batch 8 x 128; both dtypes
    python benchmarks/bert.py --quick              # 2 layers, d 128 (smoke run)
    python benchmarks/bert.py --dtype float32 --rounds 5 --threads 1
    python benchmarks/bert.py --profile            # also: where causalnet's time goes, by op kind

A ``transformers.BertModel`` with random weights (``BertConfig()``'s BERT-base
sizes, no download, eval mode) is rebuilt with
:func:`causalnet.models.transformer.from_huggingface` in the same dtype. Both
run the same token ids (and zero token types, no padding) to the last hidden
state ``n``; their outputs are compared first. causalnet runs an execution
:class:`~causalnet.inference.tensor.Plan` of ``n`` (what ``forward(keep=["n"])``
does, without the Trace), with its fused kernels
(:mod:`causalnet.mechanisms.tensor.fused`) compiled before timing.

Threads: PyTorch (``torch.set_num_threads``) and numpy's BLAS (threadpoolctl)
are pinned to the same count, ``--threads`` (default 1: the machine is shared).
Timings are CPU time (``time.process_time``) and wall time per call; the
variants run interleaved round after round and the table gives medians and the
median of per-round ratios ``causalnet / torch`` (goal <= 1.2).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import defaultdict

import numpy as np
import torch
import transformers
from threadpoolctl import threadpool_limits

from causalnet.inference.tensor import Plan
from causalnet.mechanisms.tensor import fused
from causalnet.models import transformer as tf


def build(layers: int, d: int, heads: int, ff: int, dtype: str):
    """A random BertModel of these sizes and its causalnet DAG (same dtype)."""
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    cfg = transformers.BertConfig(num_hidden_layers=layers, hidden_size=d, num_attention_heads=heads,
                                  intermediate_size=ff, attn_implementation="eager")
    hf = transformers.BertModel(cfg, add_pooling_layer=False).to(getattr(torch, dtype)).eval()
    return hf, tf.from_huggingface(hf, dtype=dtype)


def profile(model, x: dict, reps: int = 2) -> list[tuple[str, float]]:
    """CPU seconds per call by op class, timing each node of a forward pass."""
    acc: dict = defaultdict(float)
    for _ in range(reps):
        vals = dict(x)
        for node in model.nodes:
            if node in vals:
                continue
            mech = model.mechanisms[node]
            args = [vals[p] for p in mech.parents]
            t0 = time.process_time()
            vals[node] = mech._run(*args)  # noqa: SLF001 - the arithmetic alone, for a profile
            acc[type(mech).__name__] += time.process_time() - t0
    return sorted(((k, v / reps) for k, v in acc.items()), key=lambda kv: -kv[1])


def run(dtype: str, sizes: tuple, n: int, t: int, rounds: int, do_profile: bool) -> dict:
    layers, d, heads, ff = sizes
    hf, model = build(layers, d, heads, ff, dtype)
    ids = np.random.default_rng(0).integers(0, hf.config.vocab_size, size=(n, t))
    x = {"x": ids, "token_type": np.zeros_like(ids)}
    plan = Plan(model, outputs=["n"])
    ids_t = torch.from_numpy(ids)

    def torch_fn():
        with torch.inference_mode():
            return hf(input_ids=ids_t).last_hidden_state.numpy()

    def cn_fn():
        return plan.run(x)["n"]

    if fused.AVAILABLE:            # the plan's fused kernels, compiled before timing (as "auto" does after 1 s)
        fused.set_backend("numba")
    ref, out = torch_fn(), cn_fn()
    err = float(np.abs(out - ref).max())
    tol = 5e-4 if dtype == "float32" else 1e-9
    if not err <= tol * max(1.0, float(np.abs(ref).max())):
        raise SystemExit(f"causalnet differs from transformers by {err:g} ({dtype})")
    cpu, wall = {"torch": [], "causalnet": []}, {"torch": [], "causalnet": []}
    for _ in range(rounds):
        for name, fn in (("torch", torch_fn), ("causalnet", cn_fn)):
            c0, w0 = time.process_time(), time.perf_counter()
            fn()
            cpu[name].append(time.process_time() - c0)
            wall[name].append(time.perf_counter() - w0)
    prof = profile(model, x, reps=1) if do_profile else []
    return {"cpu": cpu, "wall": wall, "err": err, "profile": prof}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2 layers, d 128, batch 2 x 32")
    ap.add_argument("--dtype", default="both", choices=["float32", "float64", "both"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="threads for PyTorch and BLAS, the same for both")
    ap.add_argument("--profile", action="store_true", help="time causalnet's nodes by op kind")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    threadpool_limits(args.threads)
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(args.threads)
    sizes, n, t = ((2, 128, 4, 512), 2, 32) if args.quick else ((12, 768, 12, 3072), 8, 128)
    dtypes = ["float32", "float64"] if args.dtype == "both" else [args.dtype]
    load = os.getloadavg()
    print(f"BERT-base shape: {sizes[0]} layers, d {sizes[1]}, {sizes[2]} heads, ffn {sizes[3]}; batch {n} x {t} "
          f"tokens; {args.rounds} rounds")
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, numpy {np.__version__}; "
          f"{args.threads} thread(s) for both; {os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f}")
    head = f"{'dtype':<9}{'torch cpu s':>12}{'cn cpu s':>10}{'cn/torch cpu':>13}{'torch wall s':>13}{'cn wall s':>10}" \
           f"{'cn/torch wall':>14}{'max |diff|':>11}"
    print(head)
    print("-" * len(head))
    profiles = {}
    for dt in dtypes:
        r = run(dt, sizes, n, t, args.rounds, args.profile)
        c, w = r["cpu"], r["wall"]
        rc = statistics.median(a / b for a, b in zip(c["causalnet"], c["torch"]))
        rw = statistics.median(a / b for a, b in zip(w["causalnet"], w["torch"]))
        print(f"{dt:<9}{statistics.median(c['torch']):>12.3f}{statistics.median(c['causalnet']):>10.3f}{rc:>13.2f}"
              f"{statistics.median(w['torch']):>13.3f}{statistics.median(w['causalnet']):>10.3f}{rw:>14.2f}"
              f"{r['err']:>11.1e}")
        profiles[dt] = r["profile"]
    for dt, prof in profiles.items():
        if prof:
            total = sum(s for _, s in prof)
            print(f"\ncausalnet {dt}, CPU s per forward by op (nodes run one by one, {total:.2f} s in all):")
            for name, s in prof:
                print(f"  {name:<20}{s:>8.3f}  {100 * s / total:5.1f}%")


if __name__ == "__main__":
    main()
