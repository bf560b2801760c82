"""Explorer update latency over the JSON API, on munin1 (186 nodes) and pathfinder (109 nodes).

Usage::

    python benchmarks/explorer.py                      # munin1 and pathfinder, 12 updates each
    python benchmarks/explorer.py --networks alarm --updates 5

One *update* is what the page sends after a click: ``POST /api/query`` with the
evidence and interventions so far, answered with the posterior of every node
(one request; the server asks the library's engines for every node's marginal).
The time is the wall time of the whole HTTP round trip (JSON in, JSON out) from
a client in the same process, on a server started by :func:`causalnet.explore`;
the CPU time of the process over the same round trip (server thread and client)
is printed beside it, since a loaded machine stretches wall times far more.
Each network gets a sequence of distinct updates built like a person's clicks:
observe 1, 2, 3 nodes (states from a forward sample, so ``P(e) > 0``), then a
``do`` on another node, then clear. The first request (the prior; it builds the
network's tables) is reported on its own as "first".

Peer (``--peer``, pathfinder by default: on munin1 pyAgrum took 391 s for one
update on this machine): pyAgrum's ``LazyPropagation`` on the same BIF file and the same evidence
(evidence-only updates; pyAgrum's ``do`` lives in another module), timed as
``setEvidence`` + ``makeInference`` + ``posterior`` of every node on one
``LazyPropagation`` built before the first update (both sides warm), with no HTTP
or JSON. Before any ratio is printed the posteriors of both are checked to agree
to 1e-6 on every node of every update (the BIF numbers carry a few digits and the
two libraries renormalize the rows differently, so differences of about 1e-7 are
expected, as in ``real_networks.py``); the script exits with status 1 if they do
not. This is a report, not a test: nothing is asserted about time.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import urllib.request  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's causalnet, not an installed one

import numpy as np  # noqa: E402
from discrete_common import bif_path, load_pyagrum  # noqa: E402

import causalnet as cn  # noqa: E402


def updates(model, n: int, seed: int) -> list[tuple[dict, dict]]:
    """`n` (evidence, do) pairs like a person's clicks: observe, observe, observe, do, clear; repeat."""
    rng = np.random.default_rng(seed)
    nodes = list(model.nodes)
    out: list = []
    while len(out) < n:
        sample = model.sample(1, seed=int(rng.integers(2**31)))
        picks = [nodes[i] for i in rng.choice(len(nodes), size=4, replace=False)]
        ev: dict = {}
        for v in picks[:3]:
            ev[v] = str(model.states(v)[int(sample[v][0])])
            out.append((dict(ev), {}))
        d = picks[3]
        out.append((dict(ev), {d: str(model.states(d)[int(rng.integers(len(model.states(d))))])}))
    return out[:n]


CPU: list = []        # CPU seconds of this process (server thread + client) per request, beside the wall times


def post(url: str, payload: dict) -> tuple[float, dict]:
    data = json.dumps(payload).encode()
    t0, c0 = time.perf_counter(), time.process_time()
    req = urllib.request.Request(url + "api/query", data=data, method="POST")
    with urllib.request.urlopen(req, timeout=600) as r:
        body = json.loads(r.read())
    CPU.append(time.process_time() - c0)
    return time.perf_counter() - t0, body


def pyagrum_update(ie, names: list, evidence: dict) -> tuple[float, dict]:
    """One update on a warm ``LazyPropagation`` (as the explorer's session is warm after its first request)."""
    t0 = time.perf_counter()
    ie.setEvidence(evidence)                  # replaces the previous update's evidence
    ie.makeInference()
    post = {v: np.asarray(ie.posterior(v).toarray()) for v in names}
    return time.perf_counter() - t0, post


def run(name: str, n_updates: int, seed: int, verbose: bool = False, peer: bool = True) -> int:
    model = cn.read_bif(bif_path(name))
    bn = load_pyagrum(name) if peer else None
    names = list(model.nodes)
    with cn.explore(model, browser=False, timeout=600) as page:
        first, _ = post(page.url, {"evidence": {}, "do": {}})
        CPU.clear()
        rows = []
        for ev, do in updates(model, n_updates, seed):
            t, body = post(page.url, {"evidence": ev, "do": do})
            rows.append((ev, do, t, body))
            if verbose:
                print(f"  {name}: {len(ev)} observed, {len(do)} intervened: {t * 1e3:.1f} ms (CPU "
                      f"{CPU[-1] * 1e3:.1f} ms)", file=sys.stderr, flush=True)
        cpu = list(CPU)
    bad, worst = 0, 0.0
    if peer:
        import pyagrum as gum

        ie = gum.LazyPropagation(bn)          # built once, untimed, like the explorer's "first" request
    peer_times, ours_ev = [], []
    for ev, do, t, body in rows:
        if do or not peer:
            continue
        tp, theirs = pyagrum_update(ie, names, ev)
        if verbose:
            print(f"  {name}: pyAgrum {len(ev)} observed: {tp * 1e3:.1f} ms", file=sys.stderr, flush=True)
        peer_times.append(tp)
        ours_ev.append(t)
        for v in names:
            ours = np.array([body["posteriors"][v][s] for s in model.states(v)])
            worst = max(worst, float(np.max(np.abs(ours - theirs[v]))))
            if not np.allclose(ours, theirs[v], atol=1e-6, rtol=0):
                print(f"DISAGREE {name} {v} given {ev}: causalnet {ours} pyAgrum {theirs[v]}", file=sys.stderr)
                bad += 1
    if bad:
        return 1
    times = [t for *_, t, _ in rows]
    do_times = [t for _, do, t, _ in rows if do]
    print(f"{name:<11} {len(names):>5} nodes  first {first * 1e3:8.1f} ms   update median {statistics.median(times) * 1e3:7.1f} ms"
          f"  max {max(times) * 1e3:7.1f} ms  (with do: median {statistics.median(do_times) * 1e3:7.1f} ms)")
    print(f"{'':<11} CPU of the process per update (server and client; the load does not stretch it as it "
          f"stretches wall times): median {statistics.median(cpu) * 1e3:7.1f} ms  max {max(cpu) * 1e3:7.1f} ms")
    if not peer:
        print(f"{'':<11} (no peer run: pyAgrum's LazyPropagation took 391 s for one {name} update here; --peer {name} "
              f"forces it)")
        return 0
    ratio = statistics.median(ours_ev) / statistics.median(peer_times)
    print(f"{'':<11} evidence-only updates: causalnet over HTTP {statistics.median(ours_ev) * 1e3:7.1f} ms, "
          f"pyAgrum LazyPropagation in-process {statistics.median(peer_times) * 1e3:7.1f} ms "
          f"(causalnet/pyAgrum {ratio:.2f}x); posteriors agree on {len(ours_ev)} updates, max |diff| {worst:.1e}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--networks", nargs="+", default=["munin1", "pathfinder"])
    p.add_argument("--updates", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--peer", nargs="*", default=["pathfinder"], help="networks also run on pyAgrum (munin1's "
                   "junction tree has a clique of 7.8e7 entries: LazyPropagation takes minutes per update)")
    p.add_argument("--verbose", action="store_true", help="print each update's time as it is measured")
    args = p.parse_args(argv)
    with open("/proc/loadavg") as f:
        print(f"load average: {f.read().split()[:3]} (the machine is shared; figures are wall times)", flush=True)
    status = 0
    for name in args.networks:
        status |= run(name, args.updates, args.seed, args.verbose, name in args.peer)
    return status


if __name__ == "__main__":
    sys.exit(main())
