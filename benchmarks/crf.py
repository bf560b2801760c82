"""Linear-chain CRF speed and accuracy: causalnet's CRF vs sklearn-crfsuite.

Usage::

    python benchmarks/crf.py             # 2,000 training + 500 test sequences, 50 iterations
    python benchmarks/crf.py --quick     # 500 + 150 sequences, 20 iterations (smoke run)
    python benchmarks/crf.py --iterations 0 --repeats 1 --settings 0.1/0.1   # one first fit each, default stopping

The data come from ``causalnet.models.crf.synthetic_tagging`` (seeded): an
HMM-like source with 9 labels emitting words, about 20 tokens per sequence and
~19 CRFsuite-style features per token (word, suffixes, prefix, shape flags,
neighbour words, a word bigram), about 10^5 distinct attributes. Both
libraries train on the same data with the same c1, c2 and iteration count and
predict the same held-out sequences; fit times include turning the feature
dicts into each library's internal form. Times are the best of ``--repeats``
runs, the two libraries interleaved (the machine may be shared); both wall
clock and process CPU time are shown, since on busy shared cores wall time
mostly measures the neighbours. Ratios above 1 mean causalnet is faster.
The "first fit" row is each library's first fit in the process: causalnet's
includes compiling its numba forward-backward kernel (about 1 s, once per
process; see :mod:`causalnet.inference.chain.ragged`), which the best-of
figures leave out.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")          # one thread, as CRFsuite (set before numpy is imported)

import argparse  # noqa: E402
import time  # noqa: E402

from agreement import require  # noqa: E402  (benchmarks/ is the script's directory)

from causalnet.models.crf import CRF, synthetic_tagging  # noqa: E402


def best_of(fn, repeats):
    """(best wall seconds, best CPU seconds), last result."""
    wall = cpu = float("inf")
    out = None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return (wall, cpu), out


def token_accuracy(pred, y):
    hits = sum(a == b for p, t in zip(pred, y) for a, b in zip(p, t))
    return hits / sum(map(len, y))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small data, few iterations")
    ap.add_argument("--train", type=int, default=2000, help="training sequences")
    ap.add_argument("--test", type=int, default=500, help="held-out sequences")
    ap.add_argument("--iterations", type=int, default=50,
                    help="L-BFGS iterations; 0: each library's default stopping rule (no iteration cap)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--settings", default="0.1/0.1,0/0.1", help="comma-separated c1/c2 pairs")
    args = ap.parse_args(argv)
    if args.quick:
        args.train, args.test, args.iterations, args.repeats = 500, 150, 20, 1
    cap = args.iterations or None

    import sklearn_crfsuite

    X, y = synthetic_tagging(args.train + args.test, seed=args.seed)
    Xtr, ytr, Xte, yte = X[: args.train], y[: args.train], X[args.train :], y[args.train :]
    n_tok = sum(map(len, X))
    n_feat = sum(len(item) for seq in X for item in seq)
    print(
        f"{args.train} train + {args.test} test sequences, {n_tok / len(X):.1f} tokens/sequence, "
        f"{n_feat / n_tok:.1f} features/token, {cap or 'default stopping, no cap on'} L-BFGS iterations, "
        f"best of {args.repeats}"
    )

    rows = []
    first = None  # the first fit of each library in this process (causalnet's compiles its numba kernel)
    for setting in args.settings.split(","):
        c1, c2 = (float(v) for v in setting.split("/"))
        t_ref = t_us = (float("inf"), float("inf"))
        for _ in range(args.repeats):  # interleave the two libraries
            ref = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=c1, c2=c2, max_iterations=cap)
            t1, _ = best_of(lambda ref=ref: ref.fit(Xtr, ytr), 1)
            t_ref = tuple(map(min, t_ref, t1))
            ours = CRF(c1=c1, c2=c2, max_iterations=cap)
            t2, _ = best_of(lambda ours=ours: ours.fit(Xtr, ytr), 1)
            t_us = tuple(map(min, t_us, t2))
            if first is None:
                first = (f"  first fit (c1={c1:g}, incl. numba compile)", t1, t2)
        rows.append((f"fit c1={c1:g} c2={c2:g}", t_ref, t_us))
        if first is not None and len(rows) == 1:
            rows.append(first)
        tp_ref = tp_us = tm_ref = tm_us = (float("inf"), float("inf"))
        for _ in range(5 * args.repeats):  # cheap: more interleaved repeats
            t, p_ref = best_of(lambda ref=ref: ref.predict(Xte), 1)
            tp_ref = tuple(map(min, tp_ref, t))
            t, p_us = best_of(lambda ours=ours: ours.predict(Xte), 1)
            tp_us = tuple(map(min, tp_us, t))
            t, _ = best_of(lambda ref=ref: ref.predict_marginals(Xte), 1)
            tm_ref = tuple(map(min, tm_ref, t))
            t, _ = best_of(lambda ours=ours: ours.predict_marginals(Xte), 1)
            tm_us = tuple(map(min, tm_us, t))
        rows.append(("  predict", tp_ref, tp_us))
        rows.append(("  predict_marginals", tm_ref, tm_us))
        acc_ref, acc_us = token_accuracy(p_ref, yte), token_accuracy(p_us, yte)
        loss_ref = ref.training_log_.iterations[-1]["loss"]
        loss_us = ours.training_log_[-1]["loss"]
        # two L-BFGS implementations stopped after the same iterations: the same model up to where each stops
        require(abs(acc_ref - acc_us) <= 0.01, f"c1={c1:g} c2={c2:g}: held-out accuracy {acc_us:.4f} against "
                f"crfsuite's {acc_ref:.4f} (at most 0.01 apart)")
        require(abs(loss_us - loss_ref) <= 0.02 * abs(loss_ref), f"c1={c1:g} c2={c2:g}: final objective "
                f"{loss_us:.1f} against crfsuite's {loss_ref:.1f} (at most 2% apart)")
        rows.append(("  held-out token accuracy", acc_ref, acc_us))
        rows.append(("  final training objective", loss_ref, loss_us))

    w = max(len(r[0]) for r in rows)
    head = f"{'crfsuite':>9} {'causalnet':>9} {'ratio':>6}"
    print(f"{'':{w}}  {'wall':^26}  {'cpu':^26}")
    print(f"{'':{w}}  {head}  {head}")
    for name, a, b in rows:
        if "accuracy" in name:
            print(f"{name:{w}}  {a:9.4f} {b:9.4f}")
        elif "objective" in name:
            print(f"{name:{w}}  {a:9.1f} {b:9.1f}")
        else:
            cells = [f"{x * 1e3:7.0f}ms {y * 1e3:7.0f}ms {x / y:5.2f}x" for x, y in zip(a, b)]
            print(f"{name:{w}}  " + "  ".join(cells))


if __name__ == "__main__":
    main()
