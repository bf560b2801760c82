"""DataFrames of strings (issue 31): fitting, scoring and querying string columns against categoricals and pgmpy.

Usage::

    PYTHONPATH=. python benchmarks/string_frames.py            # alarm and sprinkler, 10^5 rows, 7 repeats
    PYTHONPATH=. python benchmarks/string_frames.py --quick    # 10^4 rows, 2 repeats
    PYTHONPATH=. python benchmarks/string_frames.py --repeats 15 --floor   # ... and the encoding's floor

Data arrive from CSV files as strings. Each workload is one frame sampled
from the model, held three ways: pandas categoricals (the model's states as
categories), the same columns as strings (``df.astype(str)``: pandas' ``str``
dtype, Arrow-backed under pandas 3) and as Python ``object`` strings, both
one object per cell (``object``: converted from the Arrow strings) and one
object per distinct string (``object shared``: as ``pandas.read_csv(...,
dtype=object)`` gives them).

- alarm (37 columns), 10^5 rows: ``cn.fit`` on the string frame, on the
  categorical frame and on the object frame, and pgmpy's
  ``MaximumLikelihoodEstimator(...).get_parameters(n_jobs=1)`` on the same
  string frame (its construction inside the clock, as ``cn.fit`` builds
  everything inside its own);
- with ``--floor``, alarm's string columns are also passed through the least
  any encoder of them does (``floor``: a compiled loop reads each row's
  offset and one byte of its string and writes one byte per row), and the
  categorical columns' int8 codes are copied as uint8 (``cat bytes``: what
  the categorical fit does in place of an encoding), in the same
  interleaved rounds; ``bound str/cat`` is then ``(categorical - cat bytes
  + floor) / categorical``, the ratio a string fit that encoded at the floor
  and did the rest of the categorical fit's work would reach;
- sprinkler, 10^5 rows: ``cn.fit``, ``cn.score`` (BIC) and
  ``m.query("Wet", evidence=frame)`` (one posterior per row), strings against
  categoricals.

The string frames are timed under both backends of the ``strings`` kernel
family (:mod:`causalnet.runtime`): ``numpy`` (numpy word compares for columns
of few short strings, :mod:`causalnet.learning.string_words`, else Arrow's
own dictionary encoding; what ``"auto"`` uses in a fresh process on a frame
this size, switching to the kernel once half a second has been spent
encoding, or at once for a frame whose encoding would take that long; 0.05 s
once a compiled kernel of any family has run in the process) and
``numba`` (the compiled kernel). Times are
medians of CPU time (``time.process_time``, BLAS/numba threads pinned to one)
over ``--repeats`` runs (alarm: interleaved rounds, one run of every contender
per round), after one untimed run of every contender; the first
string fit of the process under each backend is printed apart (``cold``: for
``numba`` it includes importing numba and loading the cached kernel).

What a one-off script pays is measured in fresh processes (``--rounds`` of
them per contender, interleaved): the first ``cn.fit`` of alarm's frame under
``numpy``, ``numba`` and the default ``auto``, of the categorical frame, and
pgmpy's first ``get_parameters``. Each library's fitting code is imported
before the clock (pgmpy's ``pgmpy.estimators``, causalnet's
``causalnet.learning.fitting``, which ``cn.fit`` otherwise loads on its first
call); building the frame is outside it too. One ``auto`` process fits
the frame ``--fits`` times to show when it hands over to the kernel and what
that fit costs. ``auto warm`` is ``auto`` in a process where earlier work ran
a compiled kernel of another family (a d-separation query under the graph
family's ``numba`` backend, before the clock: numba has set itself up, which
is what its first kernel of a process costs): three fits show when it takes
the strings kernel and what the first fit costs then. Every fresh process's
tables are checked against the categorical fit's before a figure is printed.

Before any ratio is printed the answers are checked (exit status 1 on a
failure): the string fit's CPTs equal the categorical fit's and pgmpy's to
1e-12 (states matched by name), the object fits equal the string fit, and the
string frame's scores and per-row posteriors equal the categorical frame's.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import causalnet as cn  # noqa: E402
from causalnet import runtime  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agreement import require, require_close  # noqa: E402


def cpu(fn) -> tuple[float, object]:
    """CPU seconds of one call of `fn` (its warnings silenced) and its answer."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        out = fn()
        return time.process_time() - t, out


def timed(fn, repeat: int) -> tuple[float, object]:
    """Median CPU seconds of `repeat` calls of `fn` (after the caller's warm-up) and the last answer."""
    runs = [cpu(fn) for _ in range(repeat)]
    return statistics.median(t for t, _ in runs), runs[-1][1]


def cold(fn) -> float:
    """CPU seconds of one call of `fn` (the first of the process for that path)."""
    return cpu(fn)[0]


def by_name(model, v, states) -> np.ndarray:
    """The CPT of `v` with every axis in the state order `states` names (fits may sort states differently)."""
    mech = model.mechanisms[v]
    table = mech.table
    for ax, u in enumerate([*getattr(mech, "parents", ()), v]):
        table = np.take(table, [list(map(str, model.states(u))).index(str(s)) for s in states[u]], axis=ax)
    return table


def pgmpy_tables(cpds, model, states) -> list:
    """pgmpy's CPDs as causalnet's tables, axes (parents..., node) and states in the order of `states`."""
    out = []
    for cpd in cpds:
        v = cpd.variable
        axes = [*model.mechanisms[v].parents, v] if hasattr(model.mechanisms[v], "parents") else [v]
        vals = np.asarray(cpd.get_values(), dtype=float).reshape(list(cpd.cardinality))
        for i, name in enumerate(cpd.variables):
            vals = np.take(vals, [list(map(str, cpd.state_names[name])).index(str(s)) for s in states[name]], axis=i)
        out.append(np.transpose(vals, [cpd.variables.index(a) for a in axes]))
    return out


def frames(model, n: int):
    cats = model.sample(n, seed=0).to_pandas()                                    # categories: the model's states
    strings = cats.astype(str)
    return cats, strings, strings.astype(object), cats.astype(object)


def line(task: str, figures: dict, ratios: dict) -> None:
    parts = [f"{task:<40}"] + [f"{k} {v:7.4f}s" for k, v in figures.items()] + [f"{k} {v:6.2f}x" for k, v in ratios.items()]
    print("  ".join(parts), flush=True)


def fits(dag, frame, backend: str, repeat: int) -> tuple[float, float, object]:
    """``(cold, median, model)`` of ``cn.fit(dag, frame)`` under the ``strings`` backend `backend`."""
    with runtime.backend("strings", backend):
        first = cold(lambda: cn.fit(dag, frame))
        t, model = timed(lambda: cn.fit(dag, frame), repeat)
    return first, t, model


def interleaved(fns: dict, repeat: int) -> tuple[dict, dict]:
    """Median CPU seconds of each of `fns` over `repeat` rounds, one call of each per round, and the last answers.

    Interleaving spreads a change of the machine's load over every contender alike.
    """
    times, out = {k: [] for k in fns}, {}
    for _ in range(repeat):
        for name, fn in fns.items():
            t, out[name] = cpu(fn)
            times[name].append(t)
    return {k: statistics.median(v) for k, v in times.items()}, out


def floor_pass(column) -> np.ndarray:
    """The least any encoder of an Arrow string column does: read each row's offset and a byte of its string, and
    write one byte per row (compiled; the column's Arrow buffers are read zero-copy, chunk by chunk)."""
    import pyarrow as pa

    arr = column.array.__arrow_array__()                                  # zero-copy: pandas' own Arrow data
    arr = arr if isinstance(arr, pa.ChunkedArray) else pa.chunked_array([arr])
    out = np.empty(len(column), np.uint8)                                                          # (n,)
    row = 0
    for chunk in arr.chunks:
        _, off_buf, data_buf = chunk.buffers()
        width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        offsets = np.frombuffer(off_buf, width)[chunk.offset: chunk.offset + len(chunk) + 1]
        data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(1, np.uint8)
        _floor_kernel()(offsets, data, out[row: row + len(chunk)])
        row += len(chunk)
    return out


_FLOOR: list = []


def _floor_kernel():
    """The compiled loop of :func:`floor_pass` (compiled on first use)."""
    if not _FLOOR:
        import numba

        @numba.njit(nogil=True)
        def run(offsets, data, out):
            s = offsets[0]
            last = len(data) - 1
            for i in range(len(out)):
                e = offsets[i + 1]
                out[i] = data[min(s, last)]
                s = e
        _FLOOR.append(run)
    return _FLOOR[0]


def bench_alarm(n: int, repeat: int, floor: bool = False) -> None:
    alarm = cn.gallery.load("alarm")
    cats, strings, objects, shared = frames(alarm, n)
    states = {v: alarm.states(v) for v in alarm.nodes}

    def fit_with(frame, backend):
        def run():
            with runtime.backend("strings", backend):
                return cn.fit(alarm.dag, frame)
        return run

    fns = {"str numpy": fit_with(strings, "numpy"), "str numba": fit_with(strings, "numba"),
           "categorical": fit_with(cats, "auto"), "object": fit_with(objects, "numpy"),
           "object shared": fit_with(shared, "numpy")}
    if floor:
        columns = [strings[c] for c in strings.columns]
        codes = [np.asarray(cats[c].array.codes) for c in cats.columns]
        fns["floor"] = lambda: [floor_pass(c) for c in columns]
        fns["cat bytes"] = lambda: [c.astype(np.uint8) for c in codes]
    try:
        from pgmpy.estimators import MaximumLikelihoodEstimator  # optional heavy dependency
        from pgmpy.models import DiscreteBayesianNetwork
    except ImportError:
        MaximumLikelihoodEstimator = None
    if MaximumLikelihoodEstimator is not None:
        def pgmpy_fit():
            return MaximumLikelihoodEstimator(DiscreteBayesianNetwork(list(alarm.dag.edges)),
                                              strings).get_parameters(n_jobs=1)
        fns["pgmpy str"] = pgmpy_fit
    cold_np, cold_nb = cold(fns["str numpy"]), cold(fns["str numba"])        # the first string fits of the process
    for name in ("categorical", "object", "object shared", "pgmpy str", "floor", "cat bytes"):
        if name in fns:
            cold(fns[name])
    figures, out = interleaved(fns, repeat)
    fit_np, fit_nb, fit_cat = (out[k] for k in ("str numpy", "str numba", "categorical"))
    for name, fitted in (("numpy", fit_np), ("numba", fit_nb)):
        require_close(f"alarm: string fit ({name}) vs categorical fit",
                      [by_name(fitted, v, states) for v in alarm.nodes],
                      [fit_cat.mechanisms[v].table for v in alarm.nodes], atol=1e-12)
    for name in ("object", "object shared"):
        require_close(f"alarm: {name} fit vs string fit", [out[name].mechanisms[v].table for v in alarm.nodes],
                      [fit_np.mechanisms[v].table for v in alarm.nodes], atol=0)
    t_np, t_nb, t_cat = figures["str numpy"], figures["str numba"], figures["categorical"]
    ratios = {"str/cat numpy": t_np / t_cat, "str/cat numba": t_nb / t_cat}
    if "pgmpy str" in out:
        cpds = out["pgmpy str"]
        ours = [by_name(fit_np, c.variable, states) for c in cpds]
        theirs = pgmpy_tables(cpds, fit_np, states)
        seen = [np.isfinite(t).all(axis=-1) for t in theirs]
        require_close("alarm: string fit vs pgmpy", [o[s] for o, s in zip(ours, seen)],
                      [t[s] for t, s in zip(theirs, seen)], atol=1e-12)
        ratios["pgmpy/str numpy"] = figures["pgmpy str"] / t_np
        ratios["pgmpy/str numba"] = figures["pgmpy str"] / t_nb
    if floor:
        require(f"alarm: the floor pass read {sum(len(c) for c in out['floor'])} of {n * len(strings.columns)} rows",
                sum(len(c) for c in out["floor"]) == n * len(strings.columns))
        ratios["bound str/cat"] = (t_cat - figures["cat bytes"] + figures["floor"]) / t_cat
    line(f"fit, alarm, {n} rows", figures, {})
    line("", {}, ratios)
    print(f"{'':<34}cold (first string fit of the process): numpy {cold_np:.4f}s, numba {cold_nb:.4f}s", flush=True)


def bench_sprinkler(n: int, repeat: int) -> None:
    m = cn.gallery.load("sprinkler")
    cats, strings, _, _ = frames(m, n)
    states = {v: m.states(v) for v in m.nodes}
    cold(lambda: cn.fit(m.dag, cats))
    t_cat, fit_cat = timed(lambda: cn.fit(m.dag, cats), repeat)
    s_cat, score_cat = timed(lambda: cn.score(m.dag, cats, score="bic"), repeat)
    ev_str, ev_cat = strings.drop(columns=["Wet"]), cats.drop(columns=["Wet"])
    cold(lambda: m.query("Wet", evidence=ev_cat))
    q_cat, ans_cat = timed(lambda: m.query("Wet", evidence=ev_cat), repeat)
    for backend in ("numpy", "numba"):
        _, t_str, fit_str = fits(m.dag, strings, backend, repeat)
        require_close(f"sprinkler: string fit ({backend}) vs categorical fit",
                      [by_name(fit_str, v, states) for v in m.nodes],
                      [fit_cat.mechanisms[v].table for v in m.nodes], atol=1e-12)
        with runtime.backend("strings", backend):
            s_str, score_str = timed(lambda: cn.score(m.dag, strings, score="bic"), repeat)
            cold(lambda: m.query("Wet", evidence=ev_str))
            q_str, ans_str = timed(lambda: m.query("Wet", evidence=ev_str), repeat)
        require(abs(score_str - score_cat) <= 1e-9 * abs(score_cat), f"sprinkler BIC: strings {score_str} vs "
                f"categoricals {score_cat}")
        require_close(f"sprinkler: per-row posteriors, strings ({backend}) vs categoricals", ans_str.probs,
                      ans_cat.probs, atol=1e-12)
        for task, a, b in (("fit", t_str, t_cat), ("score (BIC)", s_str, s_cat), ("query per row", q_str, q_cat)):
            line(f"{task}, sprinkler, {n} rows, {backend}", {"causalnet str": a, "categorical": b},
                 {"str/categorical": a / b})


def child(name: str, n: int, fits: int) -> None:
    """One fresh process: ``fits`` consecutive fits of alarm's frame by contender `name`; prints JSON on stdout.

    Building the frame (sampling with causalnet, ``astype(str)``) and importing
    the library's fitting code (``pgmpy.estimators`` or
    ``causalnet.learning.fitting``) happen before the clock; the first fit then pays whatever it loads
    on first use (numba and the cached kernel for ``numba`` and, once it
    switches, ``auto``). Each fit's CPU seconds are printed, the last fit's
    tables, and for ``auto`` the fit that loaded the kernel (numba and its cache).
    """
    import json

    from causalnet.learning import string_kernel

    alarm = cn.gallery.load("alarm")
    cats, strs, _, _ = frames(alarm, n)
    states = {v: alarm.states(v) for v in alarm.nodes}
    if name == "pgmpy":
        from pgmpy.estimators import MaximumLikelihoodEstimator  # optional heavy dependency
        from pgmpy.models import DiscreteBayesianNetwork

        def run():
            return MaximumLikelihoodEstimator(DiscreteBayesianNetwork(list(alarm.dag.edges)),
                                              strs).get_parameters(n_jobs=1)
    else:
        import causalnet.learning.fitting  # noqa: F401  the fitting code, as pgmpy.estimators is imported above

        frame, backend = (cats, "auto") if name == "categorical" else (strs, name.split()[0])
        if name == "auto warm":                  # earlier work in the process ran a compiled kernel (numba set up)
            with runtime.backend("graph", "numba"):
                alarm.dag.d_separated("HISTORY", "CVP", ["LVEDVOLUME"])
            if not runtime.numba_warm():
                raise SystemExit("auto warm: no compiled kernel ran before the clock")

        def run():
            with runtime.backend("strings", backend):
                return cn.fit(alarm.dag, frame)
    times, switched, out = [], None, None
    for i in range(fits):
        t, out = cpu(run)
        times.append(t)
        if name.startswith("auto") and switched is None and string_kernel.codes_kernel.signatures:     # loaded now
            switched = i + 1
    if name == "pgmpy":
        model = cn.fit(alarm.dag, cats)
        tables = [t.tolist() for t in pgmpy_tables(sorted(out, key=lambda c: alarm.nodes.index(c.variable)),
                                                   model, states)]
    else:
        tables = [by_name(out, v, states).tolist() for v in alarm.nodes]
    print(json.dumps({"times": times, "switched": switched, "tables": tables}))


def fresh(name: str, n: int, fits: int) -> dict:
    """:func:`child` run in a new Python process (same interpreter, same environment)."""
    import json
    import subprocess

    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name, "--rows", str(n),
                           "--fits", str(fits)], capture_output=True, text=True, check=False)
    if proc.returncode:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"the fresh process for {name!r} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_fresh(n: int, rounds: int, fits: int) -> None:
    """First fits of fresh processes, interleaved over `rounds`: what a one-off script pays, per contender.

    Every contender's tables are checked against the categorical fit's of the
    same process before any figure is printed (pgmpy's where it saw the
    parent configuration).
    """
    names = ["numpy", "numba", "auto", "auto warm", "categorical"]
    try:
        import pgmpy  # noqa: F401  optional heavy dependency
        names.append("pgmpy")
    except ImportError:
        pass
    runs = {k: [] for k in names}
    for _ in range(rounds):
        for name in names:
            runs[name].append(fresh(name, n, fits if name == "auto" else 3 if name == "auto warm" else 1))
    reference = runs["categorical"][0]["tables"]
    for name in names:
        for run in runs[name]:
            ours = [np.asarray(t) for t in run["tables"]]
            ref = [np.asarray(t) for t in reference]
            if name == "pgmpy":
                seen = [np.isfinite(t).all(axis=-1) for t in ours]
                ours, ref = [o[m] for o, m in zip(ours, seen)], [r[m] for r, m in zip(ref, seen)]
            require_close(f"alarm, fresh process: {name} fit vs categorical fit", ours, ref, atol=1e-12)
    first = {k: statistics.median(r["times"][0] for r in v) for k, v in runs.items()}
    line(f"first fit of a fresh process, alarm, {n} rows", first, {})
    ratios = {f"{k}/categorical": first[k] / first["categorical"] for k in ("numpy", "numba", "auto", "auto warm")}
    if "pgmpy" in first:
        ratios.update({f"pgmpy/{k}": first["pgmpy"] / first[k] for k in ("numpy", "numba", "auto")})
    line("", {}, ratios)
    autos = runs["auto"]
    before = [t for r in autos for t in r["times"][1:(r["switched"] or fits + 1) - 1]]     # fits 2..S-1: numpy path
    loads = [r["times"][r["switched"] - 1] for r in autos if r["switched"]]                   # fit S: loads the kernel
    after = [t for r in autos if r["switched"] for t in r["times"][r["switched"]:]]
    def med(xs: list) -> str:
        return f"{statistics.median(xs):.4f}s" if xs else "n/a"

    print(f"{'':<34}auto, one process of {fits} fits: numba and the kernel loaded in fit "
          f"{[r['switched'] for r in autos]}; fits before it (not the first) median {med(before)}, the fit that "
          f"loads them {med(loads)}, fits after it median {med(after)}", flush=True)
    warm = runs["auto warm"]
    print(f"{'':<34}auto warm (a compiled kernel of another family ran before the clock), 3 fits per process: "
          f"the kernel loaded in fit {[r['switched'] for r in warm]}; fit 1 median "
          f"{med([r['times'][0] for r in warm])}, fit 2 {med([r['times'][1] for r in warm])}, "
          f"fit 3 {med([r['times'][2] for r in warm])}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="10^4 rows, 2 repeats")
    ap.add_argument("--rounds", type=int, default=5, help="fresh processes per contender (first fits)")
    ap.add_argument("--fits", type=int, default=25, help="fits in each fresh process of the auto backend")
    ap.add_argument("--floor", action="store_true",
                    help="also time the least an encoder of the string columns does, and the bound it sets")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    n, repeat = (10_000, 2) if args.quick else (args.rows, args.repeats)
    if args.child:
        child(args.child, n, args.fits)
        return 0
    with open("/proc/loadavg") if os.path.exists("/proc/loadavg") else open(os.devnull) as f:
        load = f.read().split()[:3]
    print(f"string frames: {n} rows, medians of {repeat} CPU-time runs; load average {' '.join(load) or 'n/a'}",
          flush=True)
    bench_alarm(n, repeat, args.floor)
    bench_fresh(n, 1 if args.quick else args.rounds, 5 if args.quick else args.fits)
    bench_sprinkler(n, repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
