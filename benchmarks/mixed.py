"""Exact inference in a 40-node conditional Gaussian network: time per query and per batch of evidence rows.

Workload: a random CG network of 20 discrete nodes (2 or 3 states, up to two
discrete parents among the previous five) and 20 real nodes (one or two
discrete parents, a real parent with probability 0.8 and a second one with
probability 0.3). Evidence: every third real node (its values drawn from the
model) and four discrete nodes. Queries: a real target (a Gaussian mixture)
and a discrete target, exact (the strong elimination), for 1, 10, 100 and 1000
evidence rows in one batched call (median wall and CPU time of repeated
calls; the first call on a fresh model, which builds and caches the
per-structure conditioning, is timed apart).

No library offers exact conditional Gaussian inference with do in Python
(pgmpy's hybrid support and pyAgrum's CLG module are continuous-only or
sampling-based), so there is no peer ratio. Answers are checked before any
time is printed (exit 1 otherwise):

* on 32-node networks from the same generator (12 discrete, 20 real nodes, the
  same evidence pattern), against brute force written here (every
  configuration of the discrete nodes agreeing with the discrete evidence, each
  Gaussian built as ``(I - B)^{-1}`` and conditioned with
  ``numpy.linalg.solve``), to 1e-9;
* on the 40-node network, against causalnet's likelihood weighting
  (``method="sampling"``, 200,000 samples) within 5 of its standard errors
  (a weak check: with eleven observed nodes the weights are heavy-tailed).

Run: ``python benchmarks/mixed.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(__file__))

from discrete_common import limit_blas  # noqa: E402

import causalnet as cn  # noqa: E402


def network(n_disc: int, n_real: int, seed: int):
    """(model, description) of a random CG network: discrete nodes D*, real nodes R*."""
    rng = np.random.default_rng(seed)
    mechs, info = {}, {}
    for i in range(n_disc):
        cand = [f"D{j}" for j in range(max(0, i - 5), i)]
        parents = sorted(rng.choice(cand, size=min(len(cand), int(rng.integers(0, 3))), replace=False).tolist())
        card = int(rng.integers(2, 4))
        cards = [info[p]["card"] for p in parents]
        table = rng.dirichlet(np.ones(card), size=int(np.prod(cards))).reshape(*cards, card)
        name = f"D{i}"
        mechs[name] = cn.CPT(parents, table) if parents else cn.Categorical(table)
        info[name] = {"kind": "d", "card": card, "parents": parents, "table": table}
    for i in range(n_real):
        dpar = sorted(rng.choice(n_disc, size=int(rng.integers(1, 3)), replace=False).tolist())
        dpar = [f"D{j}" for j in dpar]
        rpar = []
        if i and rng.random() < 0.8:
            rpar.append(f"R{i - 1}")
        if i > 1 and rng.random() < 0.3:
            rpar.append(f"R{int(rng.integers(0, i - 1))}")
        cards = tuple(info[p]["card"] for p in dpar)
        b = rng.normal(size=cards)
        w = rng.uniform(-1.2, 1.2, size=(*cards, len(rpar)))
        var = rng.uniform(0.3, 1.5, size=cards)
        name = f"R{i}"
        mechs[name] = cn.ConditionalLinearGaussian(dpar + rpar, b, w, var)
        info[name] = {"kind": "r", "dpar": dpar, "rpar": rpar, "b": b, "w": w, "var": var}
    return cn.CausalModel(mechs), info


def brute_force(info: dict, evidence: dict, target: str):
    """Mean and variance of a real target, or the table of a discrete one, by full enumeration."""
    disc = [v for v in info if info[v]["kind"] == "d"]
    reals = [v for v in info if info[v]["kind"] == "r"]
    ridx = {v: i for i, v in enumerate(reals)}
    d = len(reals)
    obs = [ridx[v] for v in reals if v in evidence]
    x = np.array([evidence[v] for v in reals if v in evidence])
    weights, means, varis, states = [], [], [], []
    for combo in itertools.product(*[range(info[v]["card"]) for v in disc]):
        s = dict(zip(disc, combo))
        if any(s[v] != evidence[v] for v in disc if v in evidence):
            continue
        p = np.prod([info[v]["table"][tuple(s[q] for q in info[v]["parents"]) + (s[v],)] for v in disc])
        B, b, D = np.zeros((d, d)), np.zeros(d), np.zeros(d)
        for v in reals:
            k = tuple(s[q] for q in info[v]["dpar"])
            b[ridx[v]], D[ridx[v]] = info[v]["b"][k], info[v]["var"][k]
            for j, q in enumerate(info[v]["rpar"]):
                B[ridx[v], ridx[q]] = info[v]["w"][k][j]
        A = np.linalg.inv(np.eye(d) - B)
        mu, S = A @ b, A @ np.diag(D) @ A.T
        S_ee = S[np.ix_(obs, obs)]
        r = x - mu[obs]
        p *= np.exp(-0.5 * r @ np.linalg.solve(S_ee, r)) / np.sqrt(np.linalg.det(2 * np.pi * S_ee))
        gain = np.linalg.solve(S_ee, S[obs, :]).T
        mu, S = mu + gain @ r, S - gain @ S[obs, :]
        weights.append(p)
        states.append(s)
        if target in ridx:
            means.append(mu[ridx[target]])
            varis.append(S[ridx[target], ridx[target]])
    w = np.array(weights) / np.sum(weights)
    if target in ridx:
        m = w @ np.array(means)
        return m, w @ (np.array(varis) + np.array(means) ** 2) - m * m
    out = np.zeros(info[target]["card"])
    for s, wk in zip(states, w):
        out[s[target]] += wk
    return out


def evidence_rows(model, info, n: int, seed: int) -> dict:
    """Every third real node and four discrete nodes, values from a forward sample of n rows."""
    s = model.sample(n, seed=seed)
    reals = [v for v in info if info[v]["kind"] == "r"]
    disc = [v for v in info if info[v]["kind"] == "d"]
    ev = {v: np.asarray(s[v]) for v in reals[::3]}
    ev.update({v: np.asarray(s[v]) for v in disc[1::max(1, len(disc) // 4)][:4]})
    return ev


def row(ev: dict, t: int) -> dict:
    return {k: (float(a[t]) if a.dtype.kind == "f" else int(a[t])) for k, a in ev.items()}


def check_small(seed: int) -> None:
    model, info = network(12, 20, seed)
    ev = row(evidence_rows(model, info, 1, seed), 0)
    for target in ("R19", "R17", "D11", "D0"):
        if target in ev:
            continue
        got = model.query(target, evidence=ev, method="exact")
        want = brute_force(info, ev, target)
        if target.startswith("R"):
            err = max(abs(got.mean[0] - want[0]), abs(got.var[0] - want[1]))
        else:
            err = float(np.max(np.abs(got.probs - want)))
        if not err < 1e-9:
            sys.exit(f"32-node network (seed {seed}): {target} differs from brute force by {err:.3g}")


def check_sampling(model, ev: dict, targets, n_samples: int) -> None:
    for target in targets:
        exact = model.query(target, evidence=ev, method="exact")
        lw = model.query(target, evidence=ev, method="sampling", n_samples=n_samples, seed=3)
        if target.startswith("R"):
            diff, se = abs(exact.mean[0] - float(np.ravel(lw.mean(target))[0])), float(np.ravel(lw.std_err(target))[0])
        else:
            k = int(np.argmax(exact.probs))
            diff, se = abs(exact.probs[k] - lw.probs[k]), float(lw.std_err[k])
        if not diff < 5 * se + 1e-12:
            sys.exit(f"40-node network: {target} differs from likelihood weighting by {diff:.3g} > 5 SE ({se:.3g})")
        print(f"  {target}: exact vs likelihood weighting ({n_samples} samples): |diff| = {diff:.2e}, "
              f"SE = {se:.2e}")


def timed(fn, repeats: int) -> tuple[float, float]:
    """Median wall and CPU (process) seconds of `repeats` calls of `fn`."""
    import statistics
    import time

    wall, cpu = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sampling-check", action="store_true", help="only the likelihood-weighting check (run in a "
                    "child process: its 200,000-sample arrays would slow the timed loop of the parent)")
    args = ap.parse_args()
    limit_blas(1)
    model, info = network(20, 20, 0)
    ev_all = evidence_rows(model, info, 1000, 1)
    reals_free = [v for v in info if info[v]["kind"] == "r" and v not in ev_all]
    disc_free = [v for v in info if info[v]["kind"] == "d" and v not in ev_all]
    targets = [reals_free[-1], disc_free[-1]]
    if args.sampling_check:
        check_sampling(model, row(ev_all, 0), targets, 40_000 if args.quick else 200_000)
        return
    for seed in range(1 if args.quick else 3):
        check_small(seed)
    print(f"32-node networks (12 discrete, 20 real): exact answers equal brute force to 1e-9 "
          f"({1 if args.quick else 3} networks)")
    import subprocess

    child = subprocess.run([sys.executable, __file__, "--sampling-check"] + (["--quick"] if args.quick else []))
    if child.returncode:
        sys.exit(child.returncode)
    print(f"causalnet from {os.path.dirname(cn.__file__)}; method: "
          f"{model.query(targets[0], evidence=row(ev_all, 0), method='exact').method!r}")
    print(f"load: {open('/proc/loadavg').read().split()[:3]} (machine shared with other jobs)")
    print(f"{'target':>8} {'rows':>6} {'first call ms':>14} {'median wall ms':>15} {'median CPU ms':>14} "
          f"{'CPU ms per row':>15}")
    for target in targets:
        for n in (1, 10, 100, 1000):
            ev = {k: (a[:n] if n > 1 else a[0]) for k, a in ev_all.items()}
            fresh, _ = network(20, 20, 0)
            first, _ = timed(lambda m=fresh, t=target, e=ev: m.query(t, evidence=e, method="exact"), 1)
            wall, cpu = timed(lambda t=target, e=ev: model.query(t, evidence=e, method="exact"),
                              3 if args.quick else 9)
            print(f"{target:>8} {n:>6} {first * 1e3:>14.1f} {wall * 1e3:>15.2f} {cpu * 1e3:>14.2f} "
                  f"{cpu * 1e3 / n:>15.4f}")
    print(f"load: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
