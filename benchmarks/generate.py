"""Generation speed: causalnet with and without its key/value cache, and the transformers package, one process.

Usage::

    python benchmarks/generate.py                 # GPT-2 shape: 12 layers, d 768, 12 heads, vocab 50257
    python benchmarks/generate.py --quick         # 2 layers, d 128 (smoke run)
    python benchmarks/generate.py --dtype float64 --threads 1

A ``transformers.GPT2LMHeadModel`` with random weights (no download) is
rebuilt with :func:`causalnet.models.transformer.from_huggingface`; each
variant continues the same random prompt (``--prompt`` tokens, default 32) by
``--new`` greedy tokens (default 64):

* ``transformers`` — ``model.generate(do_sample=False)`` (its own cache);
* ``causalnet cache`` — ``generate(model, prompt, steps)``;
* ``causalnet no cache`` — ``generate(..., cache=False)``, the whole prefix each step.

The tokens of every variant are compared first (greedy decoding: they must be
equal, barring float32 ties). Timings are the median of ``--rounds`` rounds
(the no-cache variant runs once per round too; use ``--rounds 1`` for a quick
figure). Ratios: ``cache / transformers`` (goal <= 1.3) and ``no cache /
cache`` (goal >= 5).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch
import transformers
from agreement import require  # benchmarks/ is the script's directory

from causalnet.models import transformer as tf


def build(layers: int, d: int, heads: int, vocab: int, dtype: str):
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=layers, n_embd=d, n_head=heads, vocab_size=vocab, n_positions=1024,
                                  bos_token_id=None, eos_token_id=None)
    hf = transformers.GPT2LMHeadModel(cfg).to(getattr(torch, dtype)).eval()
    hf.generation_config.eos_token_id = None
    hf.generation_config.pad_token_id = 0
    return hf, tf.from_huggingface(hf, dtype=dtype)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="threads for PyTorch and BLAS (default 1)")
    args = ap.parse_args(argv)
    if args.threads:
        from threadpoolctl import threadpool_limits

        torch.set_num_threads(args.threads)
        threadpool_limits(args.threads)
    layers, d, heads, vocab = (2, 128, 4, 1000) if args.quick else (12, 768, 12, 50257)
    hf, model = build(layers, d, heads, vocab, args.dtype)
    prompt = np.random.default_rng(0).integers(vocab, size=(1, args.prompt))
    pt = torch.from_numpy(prompt)

    def run_hf():
        with torch.inference_mode():
            return hf.generate(pt, attention_mask=torch.ones_like(pt), max_new_tokens=args.new,
                               do_sample=False).numpy()

    variants = {
        "transformers": run_hf,
        "causalnet cache": lambda: tf.generate(model, prompt, args.new),
        "causalnet no cache": lambda: tf.generate(model, prompt, args.new, cache=False),
    }
    outs = {k: fn() for k, fn in variants.items()}      # also the warm-up
    ref = outs["transformers"]
    agree = {k: float((o == ref).mean()) if o.shape == ref.shape else 0.0 for k, o in outs.items()}
    for k, a in agree.items():                              # greedy decoding: the very same tokens
        require(a == 1.0, f"{k} generates other tokens than transformers ({a:.3f} of them equal)")
    times = {k: [] for k in variants}
    for _ in range(args.rounds):
        for k, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"GPT-2 shape: {layers} layers, d {d}, {heads} heads, vocab {vocab}, {args.dtype}; prompt {args.prompt}, "
          f"{args.new} new tokens, greedy; {args.rounds} rounds")
    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads), transformers {transformers.__version__}, "
          f"numpy {np.__version__}, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print()
    print(f"{'variant':<22}{'median s':>10}{'ms/token':>10}{'tokens = transformers':>24}")
    for k in variants:
        print(f"{k:<22}{med[k]:>10.2f}{1e3 * med[k] / args.new:>10.1f}{agree[k]:>24.3f}")
    print()
    print(f"cache / transformers: {med['causalnet cache'] / med['transformers']:.2f} (goal <= 1.3)")
    print(f"no cache / cache:     {med['causalnet no cache'] / med['causalnet cache']:.1f}x (goal >= 5)")


if __name__ == "__main__":
    main()
