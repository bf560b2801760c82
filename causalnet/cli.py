"""The ``causalnet`` command.

Sub-commands::

    causalnet tour [--out DIR]                   # a guided report over the gallery
    causalnet dsep GRAPH X Y [--given Z]         # d-separation
    causalnet adjust GRAPH X Y                   # backdoor / minimal / front-door sets
    causalnet draw GRAPH [-o FILE] [--highlight A,B,C] [--do X] ...
    causalnet query MODEL "P(Y | do(X=1), Z=0)"   # a probability, do- or counterfactual query
    causalnet gallery                            # list the gallery

MODEL is ``gallery:NAME`` or a model file: BIF (``.bif``, ``.bif.gz``),
XMLBIF (``.xml``, ``.xmlbif``) or causalnet JSON (``.json``).

GRAPH is a file holding dagitty-like text (see :meth:`causalnet.DAG.parse`)
or JSON (``{"nodes": [...], "edges": [[u, v], ...], "latent": [...]}``),
``gallery:NAME``, or graph text given inline (``"A -> B <- C"``). Node lists
are comma-separated (``X1,X2``).

A user mistake (unknown node, bad file, bad syntax, missing renderer) prints
one line ``causalnet: error: ...`` on stderr and exits with status 2.

The tour is a list of sections, :data:`TOUR_SECTIONS`; each is a
``(title, function)`` pair whose function takes a :class:`TourContext`,
writes its files through it and returns markdown. Later parts of the library
append their own sections.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import gallery
from .errors import CausalNetError, GraphError, RenderError
from .graph.dag import DAG
from .io.dot import find_renderer, render, to_dot

__all__ = ["main", "load_graph", "load_model", "run_tour", "TourContext", "TOUR_SECTIONS"]

_PROG = "causalnet"
_JSON_KEYS = ("nodes", "edges", "latent")
_SHOW_SETS = 12  # at most this many adjustment sets are listed per kind
_MAX_SETS = 1000  # and at most this many are searched for


class _UsageError(Exception):
    """Raised instead of argparse's print-usage-and-exit."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # noqa: D401 - argparse hook
        raise _UsageError(f"{message} (see '{self.prog} --help')")


# -- graphs from the command line ------------------------------------------------


def _dag_from_json(data: Any, source: str) -> DAG:
    if not isinstance(data, dict):
        raise GraphError(f"{source}: JSON graph must be an object with keys {list(_JSON_KEYS)}, got {type(data).__name__}")
    unknown = sorted(set(data) - set(_JSON_KEYS))
    if unknown:
        raise GraphError(f"{source}: unknown JSON keys {unknown}; allowed keys are {list(_JSON_KEYS)}")
    for key in _JSON_KEYS:
        if not isinstance(data.get(key, []), list):
            raise GraphError(f"{source}: JSON key {key!r} must be a list, got {type(data[key]).__name__}")
    return DAG(data.get("edges", []), nodes=data.get("nodes", []), latent=data.get("latent", []))


def load_graph(spec: str) -> DAG:
    """The DAG named by a command-line GRAPH argument.

    Parameters
    ----------
    spec : str
        ``gallery:NAME``; a path to a JSON file (``.json``, or text starting
        with ``{`` that parses as JSON) or a dagitty-like text file; or graph
        text such as ``"A -> B; U [latent]"``.

    Raises
    ------
    GraphError
        On an unknown gallery name, bad JSON or bad graph text, or a `spec`
        that is neither a file nor graph text.
    OSError
        If the file cannot be read.
    """
    if spec.startswith("gallery:"):
        return gallery.graph(spec[len("gallery:"):])
    path = Path(spec)
    try:
        exists = path.exists()
    except OSError:  # e.g. graph text too long to be a file name
        exists = False
    if exists:
        text = path.read_text(encoding="utf-8")
        looks_json = path.suffix.lower() == ".json" or text.lstrip().startswith("{")
        if looks_json:
            try:
                data = json.loads(text)
            except json.JSONDecodeError as e:
                if path.suffix.lower() == ".json":
                    raise GraphError(f"{spec}: bad JSON at line {e.lineno}, column {e.colno}: {e.msg}") from None
            else:
                return _dag_from_json(data, spec)
        try:
            return DAG.parse(text)
        except GraphError as e:
            raise GraphError(f"{spec}: {e}") from None
    if any(tok in spec for tok in ("->", "<-", ";")):
        return DAG.parse(spec)
    hint = f"; did you mean 'gallery:{spec}'?" if spec in gallery.names() else ""
    raise GraphError(
        f"no such file {spec!r}{hint} (GRAPH is a file, 'gallery:NAME' with NAME in "
        f"{gallery.names()}, or graph text like 'A -> B')"
    )


def _node_list(g: DAG, items: Iterable[str] | None, what: str) -> list:
    """Nodes from comma-separated arguments; a name matches a node by ``str``."""
    by_str = {str(v): v for v in g.nodes}
    out: list = []
    for item in items or ():
        for name in item.split(","):
            name = name.strip()
            if not name:
                raise GraphError(f"empty name in the {what} list {item!r}")
            v = name if name in g else by_str.get(name, name)
            g._check_node(v, what)
            if v not in out:
                out.append(v)
    return out


def _fmt_set(g: DAG, nodes: Iterable[Hashable] | None) -> str:
    if nodes is None:
        return "none"
    pos = {v: i for i, v in enumerate(g.nodes)}
    items = sorted(nodes, key=lambda v: pos.get(v, len(pos)))
    return "{" + ", ".join(map(str, items)) + "}"


def _fmt_nodes(g: DAG, nodes: Iterable[Hashable]) -> str:
    nodes = list(nodes)
    return str(nodes[0]) if len(nodes) == 1 else _fmt_set(g, nodes)


def _fmt_sets(g: DAG, sets: list) -> str:
    if not sets:
        return "none"
    shown = ", ".join(_fmt_set(g, s) for s in sets[:_SHOW_SETS])
    if len(sets) >= _MAX_SETS:
        return f"{shown}, ... (stopped after {len(sets)})"
    if len(sets) > _SHOW_SETS:
        return f"{shown}, ... ({len(sets)} in all)"
    return shown


def _dsep_line(g: DAG, x: list, y: list, given: list) -> str:
    stmt = f"{_fmt_nodes(g, x)} ⊥ {_fmt_nodes(g, y)}" + (f" | {', '.join(map(str, given))}" if given else "")
    if g.d_separated(x, y, given=given):
        return f"{stmt}: yes, d-separated"
    sep = g.minimal_d_separator(x, y)
    if sep is None:
        tail = "no set of observed nodes separates them"
    else:
        tail = f"a minimal separator is {_fmt_set(g, sep) if sep else 'the empty set'}"
    return f"{stmt}: no, d-connected; {tail}"


def _adjust_lines(g: DAG, x: list, y: list) -> list[str]:
    xs = x[0] if len(x) == 1 else x
    ys = y[0] if len(y) == 1 else y
    return [
        f"backdoor adjustment sets: {_fmt_sets(g, g.backdoor_adjustment_sets(xs, ys, max_sets=_MAX_SETS))}",
        f"minimal adjustment sets: {_fmt_sets(g, g.minimal_adjustment_sets(xs, ys, max_sets=_MAX_SETS))}",
        f"front-door adjustment sets: {_fmt_sets(g, g.frontdoor_adjustment_sets(xs, ys, max_sets=_MAX_SETS))}",
    ]


def load_model(spec: str):
    """The CausalModel named by a command-line MODEL argument (see the module docstring)."""
    if spec.startswith("gallery:"):
        name = spec[len("gallery:"):]
        obj = gallery.load(name)
        if isinstance(obj, DAG):
            raise GraphError(f"gallery entry {name!r} is a graph without mechanisms; models: "
                             f"{[n for n in gallery.names() if gallery.kind(n) != 'graph']}")
        return obj
    path = Path(spec)
    if not path.exists():
        hint = f"; did you mean 'gallery:{spec}'?" if spec in gallery.names() else ""
        raise GraphError(f"no such model file {spec!r}{hint} (MODEL is a .bif/.bif.gz/.xmlbif/.json file or "
                         f"'gallery:NAME')")
    name = path.name.lower()
    if name.endswith((".bif", ".bif.gz")):
        from .io.bif import read_bif

        return read_bif(path)
    if name.endswith((".xml", ".xmlbif", ".xml.gz")):
        from .io.bif import read_xmlbif

        return read_xmlbif(path)
    if name.endswith(".json"):
        from .io.json import load_json

        return load_json(path)
    raise GraphError(f"{spec}: unknown model file type; use .bif, .bif.gz, .xmlbif or .json")


def _format_result(res) -> str:
    from .distributions import DiscreteDistribution, EmpiricalDistribution, Gaussian

    lines = []
    if isinstance(res, DiscreteDistribution):
        if res.batched:
            return repr(res)
        import itertools

        per_variable = res.states if len(res.variables) > 1 else (res.states,)
        labels = [", ".join(map(str, c)) for c in itertools.product(*per_variable)]   # C order, like probs
        errors = res.std_err.reshape(-1) if res.std_err is not None else [None] * len(labels)
        width = max(map(len, labels))
        lines.append(f"P({', '.join(map(str, res.variables))})")
        for label, p, se in zip(labels, res.probs.reshape(-1), errors):
            lines.append(f"  {label:<{width}}  {p:.6f}" + ("" if se is None else f"  ± {se:.2g}"))
    elif isinstance(res, Gaussian):
        lines.append(f"Gaussian over {', '.join(map(str, res.variables))}")
        lines.append(f"  mean {_np_fmt(res.mean)}")
        lines.append(f"  sd   {_np_fmt(res.std)}")
    elif isinstance(res, EmpiricalDistribution):
        for v in res.variables:
            lines.append(f"{v}: mean {_np_fmt(res.mean(v))} ± {_np_fmt(res.std_err(v))}")
    else:
        lines.append(repr(res))
    method = getattr(res, "method", None)
    if method:
        lines.append(f"method: {method}")
    scm = getattr(res, "scm", None)
    if scm:
        lines.append(f"SCM: {scm}")
    return "\n".join(lines)


def _np_fmt(a) -> str:
    import numpy as np

    return np.array2string(np.asarray(a), precision=4, suppress_small=True)


def _cmd_query(args) -> int:
    model = load_model(args.model)
    res = model.query(args.query, method=args.method, seed=args.seed)
    print(f"{args.query} = {res:.6g}" if isinstance(res, float) else _format_result(res))
    return 0


# -- sub-commands -----------------------------------------------------------------


def _cmd_dsep(args) -> int:
    g = load_graph(args.graph)
    x = _node_list(g, [args.x], "node")
    y = _node_list(g, [args.y], "node")
    z = _node_list(g, args.given, "conditioning node")
    print(_dsep_line(g, x, y, z))
    return 0


def _cmd_adjust(args) -> int:
    g = load_graph(args.graph)
    x = _node_list(g, [args.x], "treatment")
    y = _node_list(g, [args.y], "outcome")
    print(f"effect of {_fmt_nodes(g, x)} on {_fmt_nodes(g, y)}")
    for line in _adjust_lines(g, x, y):
        print(f"  {line}")
    return 0


def _cmd_draw(args) -> int:
    g = load_graph(args.graph)
    if args.do:
        g = g.do(_node_list(g, args.do, "intervened node"))
    options: dict[str, Any] = {"rankdir": args.rankdir, "title": args.title}
    if args.highlight:
        options["highlight_path"] = _node_list(g, [args.highlight], "path node")
    if args.given:
        options["separating_set"] = _node_list(g, args.given, "separating-set node")
    if args.clusters:
        options["clusters"] = "prefix"
    if args.output is None:
        if args.format not in (None, "dot"):
            raise RenderError(f"--format {args.format} needs an output file (-o FILE)")
        sys.stdout.write(to_dot(g, **options))
        return 0
    path = render(g, args.output, format=args.format, renderer=args.renderer, **options)
    print(f"wrote {path}")
    return 0


def _cmd_gallery(args) -> int:
    width = max(len(n) for n in gallery.names())
    for name in gallery.names():
        print(f"{name:<{width}}  {gallery.kind(name):<6}  {gallery.describe(name)}")
    return 0


def _cmd_tour(args) -> int:
    report = run_tour(args.out, renderer=args.renderer, echo=print)
    print(f"\nwrote {report}")
    return 0


# -- the tour ---------------------------------------------------------------------


@dataclass
class TourContext:
    """What a tour section gets: the output directory and a diagram writer.

    Attributes
    ----------
    out : pathlib.Path
        Directory the section writes into (exists).
    renderer : str
        ``"auto"``, ``"dot"``, ``"graphviz-pure"`` or ``"none"`` (DOT only).
    notes : list of str
        Problems met while writing (e.g. a renderer that failed); the report
        lists them.
    """

    out: Path
    renderer: str = "auto"
    notes: list[str] = field(default_factory=list)

    def diagram(self, obj: Any, stem: str, caption: str, **to_dot_options: Any) -> str:
        """Write ``stem.dot`` and, when a renderer works, ``stem.svg``; return markdown linking them.

        Never raises for lack of a renderer: the DOT file is the fallback.
        """
        (self.out / f"{stem}.dot").write_text(to_dot(obj, **to_dot_options), encoding="utf-8")
        if self.renderer != "none" and find_renderer(self.renderer) is not None:
            try:
                render(obj, self.out / f"{stem}.svg", renderer=self.renderer, **to_dot_options)
            except RenderError as e:
                self.notes.append(f"{stem}.svg was not rendered: {e}")
            else:
                return f"![{caption}]({stem}.svg)\n\n*{caption}* ([DOT source]({stem}.dot))"
        return f"*{caption}*: [{stem}.dot]({stem}.dot) (DOT text; render it with `dot -Tsvg` or `graphviz-pure -Tsvg`)"


@dataclass(frozen=True)
class _TourGraph:
    name: str
    effect: tuple[Hashable, Hashable]
    queries: tuple  # (where, graph transform or None, x, y, given)
    diagrams: tuple  # (stem suffix, caption, to_dot options, graph transform or None)
    remark: str = ""


def _bd(nodes):
    return lambda g: g.backdoor_graph(nodes)


def _do(nodes):
    return lambda g: g.do(nodes)


_TOUR_GRAPHS = (
    _TourGraph(
        "sprinkler",
        effect=("Sprinkler", "Wet"),
        queries=(
            ("", None, "Sprinkler", "Rain", ()),
            ("after do(Sprinkler)", _do("Sprinkler"), "Sprinkler", "Rain", ()),
            ("", None, "Rain", "Wet", ("Sprinkler",)),
        ),
        diagrams=(
            ("", "the backdoor path Sprinkler <- Rain -> Wet", {"highlight_path": ["Sprinkler", "Rain", "Wet"]}, None),
            ("-do", "after do(Sprinkler): its incoming edge is cut", {}, _do("Sprinkler")),
        ),
        remark="Every pair is adjacent, so the graph implies no independence; "
        "intervening on Sprinkler cuts Rain -> Sprinkler and makes the two independent.",
    ),
    _TourGraph(
        "m-bias",
        effect=("X", "Y"),
        queries=(
            ("", None, "U1", "U2", ()),
            ("", None, "U1", "U2", ("M",)),
            ("in the backdoor graph of X", _bd("X"), "X", "Y", ()),
            ("in the backdoor graph of X", _bd("X"), "X", "Y", ("M",)),
        ),
        diagrams=(
            ("", "conditioning on the collider M opens X <- U1 -> M <- U2 -> Y",
             {"highlight_path": ["X", "U1", "M", "U2", "Y"], "separating_set": ["M"]}, None),
        ),
        remark="M looks like a confounder (it precedes X and Y) but is a collider: "
        "the empty set is the only adjustment set.",
    ),
    _TourGraph(
        "frontdoor",
        effect=("Smoking", "Cancer"),
        queries=(
            ("", None, "Smoking", "Cancer", ("Tar",)),
            ("in the backdoor graph of Smoking", _bd("Smoking"), "Smoking", "Tar", ()),
            ("in the backdoor graph of Tar", _bd("Tar"), "Tar", "Cancer", ("Smoking",)),
        ),
        diagrams=(
            ("", "the front-door path Smoking -> Tar -> Cancer", {"highlight_path": ["Smoking", "Tar", "Cancer"]}, None),
        ),
        remark="Genotype is latent, so no backdoor set exists; Tar satisfies the front-door criterion.",
    ),
    _TourGraph(
        "asia",
        effect=("lung", "dysp"),
        queries=(
            ("", None, "tub", "smoke", ()),
            ("", None, "tub", "smoke", ("either",)),
            ("", None, "tub", "smoke", ("dysp",)),
            ("", None, "xray", "dysp", ("either",)),
            ("", None, "bronc", "lung", ("smoke",)),
        ),
        diagrams=(
            ("", "the backdoor path lung <- smoke -> bronc -> dysp, blocked by {smoke}",
             {"highlight_path": ["lung", "smoke", "bronc", "dysp"], "separating_set": ["smoke"]}, None),
        ),
        remark="tub and smoke are independent until either (a collider) or its descendant dysp is observed.",
    ),
)


def _graph_section(spec: _TourGraph, ctx: TourContext) -> str:
    g = gallery.graph(spec.name)
    lines = [gallery.describe(spec.name), ""]
    for suffix, caption, options, transform in spec.diagrams:
        h = transform(g) if transform else g
        lines += [ctx.diagram(h, f"{spec.name}{suffix}", caption, **options), ""]
    edges = "; ".join(f"{u} -> {v}" for u, v in g.edges)
    latent = [str(v) for v in g.nodes if v in g.latent]
    lines += [f"Graph: `{edges}`" + (f", latent: {', '.join(latent)}" if latent else "") + ".", ""]
    lines += ["**d-separation**", ""]
    for where, transform, x, y, given in spec.queries:
        h = transform(g) if transform else g
        lines.append(f"- {_dsep_line(h, [x], [y], list(given))}" + (f" ({where})" if where else ""))
    basis = g.implied_independencies()
    lines += ["", "**Implied independencies** (basis):", ""]
    lines += [f"- {s}" for s in basis] if basis else ["- none"]
    x, y = spec.effect
    lines += ["", f"**Adjustment** for the effect of {x} on {y}:", ""]
    lines += [f"- {line}" for line in _adjust_lines(g, [x], [y])]
    if spec.remark:
        lines += ["", spec.remark]
    return "\n".join(lines)


def _graph_section_fn(spec: _TourGraph) -> Callable[[TourContext], str]:
    def section(ctx: TourContext) -> str:
        return _graph_section(spec, ctx)

    section.__name__ = f"_section_{spec.name.replace('-', '_')}"
    return section


#: The tour's sections, in order: ``(title, function(ctx) -> markdown)``.
TOUR_SECTIONS: list[tuple[str, Callable[[TourContext], str]]] = [
    (f"Graph: {spec.name}", _graph_section_fn(spec)) for spec in _TOUR_GRAPHS
]


def _section_models(ctx: TourContext) -> str:
    """Discrete and Gaussian models: a query, a do-query, a counterfactual, batched evidence."""
    import numpy as np

    m = gallery.load("sprinkler")
    lines = ["The sprinkler graph with its tables (`gallery:sprinkler`).", ""]
    lines += [ctx.diagram(m, "sprinkler-model", "the sprinkler model (node colour: discrete)",
                          observed={"Wet"}), ""]
    obs = m.query("Wet", evidence={"Rain": "yes"})
    doq = m.query("P(Wet | do(Sprinkler=on))")
    seen = m.query("P(Wet | Sprinkler=on)")
    lines += [
        f"- P(Wet=wet | Rain=yes) = {obs['wet']:.4f} ({obs.method})",
        f"- P(Wet=wet | Sprinkler=on) = {seen['wet']:.4f}, but P(Wet=wet | do(Sprinkler=on)) = {doq['wet']:.4f}: "
        "seeing the sprinkler on says it is probably not raining; setting it on says nothing about rain.",
    ]
    cf = m.counterfactual("Wet", evidence={"Sprinkler": "on", "Wet": "wet"}, do={"Sprinkler": "off"})
    lines += [
        f"- Counterfactual: the sprinkler was on and the grass is wet; had it been off, the grass would have been "
        f"wet with probability {cf['wet']:.4f} ({cf.method}; {cf.scm}).",
    ]
    pn = m.query("P(Wet_{Sprinkler=off}=dry | Sprinkler=on, Wet=wet)")
    lines.append(f"- Probability of necessity `P(Wet_{{Sprinkler=off}}=dry | Sprinkler=on, Wet=wet)` = {pn:.4f}")
    rows = m.query("Wet", evidence={"Rain": np.array([0, 1, 1, 0])})
    lines.append(f"- Batched evidence Rain = [no, yes, yes, no] in one pass: P(wet) = "
                 f"{np.round(rows.probs[:, 1], 4).tolist()}")
    g = gallery.load("linear-gaussian")
    r = g.query("Income", do={"Education": 16.0})
    c = g.query("Income", evidence={"Education": 16.0})
    cfg = g.counterfactual("Income", evidence={"Ability": 1.0, "Education": 14.0, "Income": 45.0},
                           do={"Education": 16.0})
    lines += [
        "",
        "A linear-Gaussian SCM (`gallery:linear-gaussian`): Ability confounds Education and Income.",
        "",
        ctx.diagram(g, "linear-gaussian", "the linear-Gaussian SCM (node colour: real)"),
        "",
        f"- E[Income | Education=16] = {float(c.mean[0]):.3f} (confounded), "
        f"E[Income | do(Education=16)] = {float(r.mean[0]):.3f} (causal; slope 2 per year).",
        f"- Someone with Ability 1, 14 years and Income 45: with 16 years, Income would have been "
        f"{float(cfg.mean[0]):.3f} ({cfg.method}).",
    ]
    alarm = None
    try:
        alarm = gallery.load("alarm")
    except CausalNetError:
        lines += ["", "(ALARM from the bnlearn repository needs pgmpy, which ships its BIF file.)"]
    if alarm is not None:
        d = alarm.query("P(HYPOVOLEMIA | BP=LOW, HR=HIGH)")
        lines += ["", f"ALARM (37 nodes, read from bnlearn's BIF): P(HYPOVOLEMIA=TRUE | BP=LOW, HR=HIGH) = "
                      f"{d['TRUE']:.4f} ({d.method})."]
    return "\n".join(lines)


TOUR_SECTIONS.append(("Models: query, do and counterfactual", _section_models))


def _section_transformer(ctx: TourContext) -> str:
    """A small encoder: run it, ablate a head, report the effect, draw the folded and expanded views."""
    import numpy as np

    from .models import transformer as tf

    m = tf.encoder(layers=2, d_model=16, heads=4, d_ff=32, vocab=20, seed=0)
    tokens = np.random.default_rng(0).integers(0, 20, size=(4, 8))
    base = m.forward({"x": tokens})
    lines = ["A 2-layer encoder (d_model 16, 4 heads, vocabulary 20, random weights) is a CausalModel "
             f"of {len(m.nodes)} tensor nodes named after the Bayesuvius chapter (e, Q, K, V, P, A, O, N, F, n).", ""]
    effects = []
    for h in range(4):
        out = tf.ablate(m, tf.head(m, "enc.1.attn.P", h)).forward({"x": tokens}, keep=["n"])["n"]
        effects.append(float(np.sqrt(np.mean((out - base["n"]) ** 2))))
    lines.append("Zero-ablating each head of layer 1 (a `do` on its attention weights) moves the memory `n` by "
                 "(RMS): " + ", ".join(f"head {h}: {e:.4f}" for h, e in enumerate(effects)) + ".")
    med = tf.mediation(m, {"x": tokens}, {"x": np.roll(tokens, 1, axis=1)},
                       [tf.head(m, "enc.1.attn.A", h) for h in range(2)],
                       lambda tr: tr["n"][:, 0, 0])
    for label, eff in med.items():
        e = eff.mean()
        lines.append(f"- mediation through {label}: total {e['total']:+.4f}, natural direct {e['direct']:+.4f}, "
                     f"natural indirect {e['indirect']:+.4f} (interaction {e['total'] - e['direct'] - e['indirect']:+.4f})")
    dec = tf.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=10, seed=1)
    g = tf.position_graph(dec, 5)
    lines += ["", "In a decoder the causal mask makes the output at position 3 d-separated from later tokens: "
              f"`P[3] ⊥ {{x[4]}}` is {g.d_separated({'x[4]'}, {'P[3]'})}, `P[3] ⊥ x[2]` is "
              f"{g.d_separated({'x[2]'}, {'P[3]'})}.", ""]
    layer = tf.encoder_layer(d_model=8, heads=2, d_ff=16, seed=0)
    expanded = tf.encoder_layer(d_model=8, heads=2, d_ff=16, seed=0, view="expanded")
    lines += [ctx.diagram(layer, "encoder-layer-folded", "one encoder layer, folded view (heads as an axis)",
                          **tf.diagram_options(layer)), ""]
    lines += [ctx.diagram(expanded, "encoder-layer-expanded", "the same layer, expanded view (one cluster per head)",
                          **tf.diagram_options(expanded)), ""]
    abl = tf.ablate(layer, tf.head(layer, "enc.0.attn.P", 1))
    lines += [ctx.diagram(abl, "encoder-layer-ablated", "head 1 ablated: the intervened node is double-bordered",
                          **tf.diagram_options(abl))]
    return "\n".join(lines)


def _section_cauchy(ctx: TourContext) -> str:
    """The CausalQwen head on a toy sequence in all five inference modes, and one counterfactual."""
    import numpy as np

    from .inference.cauchy import cauchy_marginals
    from .models.causal_head import MODES, CausalHead

    head = CausalHead.initialise(vocab_size=6, hidden=4, num_id=5, seed=0)
    z = np.random.default_rng(0).normal(size=(1, 3, 4))
    lines = ["A CausalQwen head (vocabulary 6 with `<NUM>` = 5, width 4) on backbone features of a 3-token "
             "sequence. The individual U ~ Cauchy(loc_U, scale_U) is abducted from the context; decisions "
             "S_k and the number Y are linear in U and so exactly Cauchy.", ""]
    for mode in MODES:
        out = head.forward(z, mode=mode, seed=0)
        tokens, values = out.predict()
        lines.append(f"- mode `{mode}`: next tokens {tokens[0].tolist()}, regression loc "
                     f"{np.round(values[0], 3).tolist()}")
    m = head.to_model(3)
    S = cauchy_marginals(m, ["S"], evidence={"z": z})["S"]
    lines.append(f"- as a CausalModel: P(S_5 > 0) at position 0 = {float(S.prob_greater(0.0)[0, 0, 5]):.4f} "
                 f"(the engine's affine form, {S.method})")
    C = np.shape(head.forward(z).loc_U)[-1]
    cf = head.forward(z, mode="causal", u=np.zeros((1, 3, C)))
    lines.append(f"- do(U = 0) (the same individual for every context): loc_Y = {np.round(cf.loc_Y[0], 3).tolist()}")
    eps = np.full((1, C), 0.7)
    a = head.forward(z, mode="individual", eps_seed=eps)
    z2 = np.random.default_rng(1).normal(size=(1, 3, 4))
    b = head.forward(z2, mode="individual", eps_seed=eps)
    lines.append("- counterfactual: the same individual (eps_seed = 0.7) in another context decides "
                 f"{b.predict()[0][0].tolist()} instead of {a.predict()[0][0].tolist()}")
    lines += ["", ctx.diagram(m, "causal-head", "the head as a causal DAG: U and noise are exogenous Cauchy nodes")]
    return "\n".join(lines)


def _section_hmm(ctx: TourContext) -> str:
    """An HMM: fit on sampled data, decode, a do on a hidden state, a counterfactual."""
    import numpy as np

    from .models.hmm import HMM

    truth = HMM(3, "categorical", startprob=[0.6, 0.3, 0.1],
                transmat=[[0.8, 0.15, 0.05], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]],
                emissionprob=[[0.7, 0.2, 0.05, 0.05], [0.1, 0.6, 0.2, 0.1], [0.05, 0.05, 0.3, 0.6]])
    X, Z = truth.sample(3000, seed=0)
    lengths = [100] * 30
    model = HMM(3, "categorical", n_symbols=4, n_iter=50, n_init=3, seed=0).fit(X, lengths)
    ll_fit, ll_true = model.score(X, lengths), truth.score(X, lengths)
    lines = [f"A 3-state HMM over 4 symbols generated 30 sequences of 100 steps; Baum-Welch (3 restarts) fits a "
             f"model with log-likelihood {ll_fit:.1f} (the true parameters: {ll_true:.1f}).", ""]
    seq = np.asarray(X[:12]).reshape(-1)
    path = truth.predict(seq)
    lines.append(f"- Viterbi decoding of the first 12 observations {seq.tolist()}: {path.tolist()} "
                 f"(true states {np.asarray(Z[:12]).tolist()})")
    obs = truth.query("Z[8]", evidence=seq[:8], T=12)
    do = truth.query("Z[8]", evidence=seq[:8], do={"Z[6]": 2}, T=12)
    lines.append(f"- P(Z[8] | X[0:8]) = {np.round(obs.probs, 3).tolist()}; under do(Z[6] = 2) it becomes "
                 f"{np.round(do.probs, 3).tolist()} (the transition into Z[6] is cut and Z[6] clamped)")
    cf = truth.counterfactual("X[9]", evidence=seq[:10], do={"Z[7]": 2})
    fact = int(seq[9])
    lines.append(f"- Counterfactual: X[9] was {fact}; had Z[7] been 2, X[9] would have been distributed as "
                 f"{np.round(cf.probs, 3).tolist()} ({cf.method}; the same exogenous noise in both worlds)")
    m = truth.to_model(6)
    lines.append(f"- Unrolled over 6 steps it is a CausalModel; `X[0] ⊥ X[5] | Z[3]`: "
                 f"{m.dag.d_separated('X[0]', 'X[5]', given={'Z[3]'})}")
    fold, opts = truth.folded_dag()
    lines += ["", ctx.diagram(m, "hmm-unrolled", "the HMM unrolled over 6 steps (hidden states dashed)",
                              observed={f"X[{t}]" for t in range(6)}, rankdir="LR"), ""]
    lines += [ctx.diagram(fold, "hmm-folded", "the folded (plate) view", **opts)]
    return "\n".join(lines)


def _section_crf(ctx: TourContext) -> str:
    """A linear-chain CRF: train on a generated tagging task, decode, a do on a token."""
    import numpy as np

    from .models.crf import CRF, _synthetic_tagging

    X, y = _synthetic_tagging(500, mean_len=12, n_labels=5, n_words=2000, seed=0)
    train, test = slice(0, 400), slice(400, 500)
    crf = CRF(c1=0.05, c2=0.05, max_iterations=60).fit(X[train], y[train])
    acc = crf.score(X[test], y[test])
    lines = [f"A CRF (5 labels, {len(crf.attributes_)} attributes) trained for 60 L-BFGS iterations on 400 "
             f"generated sentences tags 100 held-out ones with token accuracy {acc:.3f}.", ""]
    sent = X[400][:6]
    pred = crf.predict_single(sent)
    lines.append(f"- decoded labels of a held-out sentence: {pred} (true {y[400][:6]})")
    before = crf.query(["y[2]", "y[3]"], sent)
    # a token that the training data labels differently from what y[2] is now
    other = next(x for xs, ys in zip(X[train], y[train]) for x, lab in zip(xs, ys) if lab != pred[2])
    after = crf.query(["y[2]", "y[3]"], sent, do={"x[2]": other})
    fmt = lambda d: {k: v for k, v in zip(d.states, np.round(d.probs, 3).tolist()) if v >= 0.001}  # noqa: E731
    lines.append(f"- P(y[2]) = {fmt(before['y[2]'])} and P(y[3]) = {fmt(before['y[3]'])}; had token 2 been "
                 f"the word {other['w']!r} (do(x[2] = its features)): P(y[2]) = {fmt(after['y[2]'])}, "
                 f"P(y[3]) = {fmt(after['y[3]'])}")
    m = crf.to_model(X=sent[:4])
    from .models._crf_causal import factor_evidence

    gen = m.query("y[2]", evidence=factor_evidence(m))
    fast = crf.query("y[2]", sent[:4])
    lines.append(f"- as a DAG with factor nodes observed true, the generic engine gives P(y[2]) equal to the chain "
                 f"engine's: max difference {float(np.abs(gen.probs - fast.probs).max()):.1e}")
    lines += ["", ctx.diagram(m, "crf-factor-graph", "the CRF over 4 tokens: labels y, tokens x, factor nodes f, g",
                              observed=set(factor_evidence(m)) | {f"x[{t}]" for t in range(4)})]
    return "\n".join(lines)


TOUR_SECTIONS.append(("HMM: fit, decode, do, counterfactual", _section_hmm))
TOUR_SECTIONS.append(("CRF: train, decode, do on a token", _section_crf))
TOUR_SECTIONS.append(("Transformers: ablation, mediation, causal masks", _section_transformer))
TOUR_SECTIONS.append(("The CausalQwen Cauchy head: five inference modes", _section_cauchy))


def _anchor(title: str) -> str:
    keep = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return keep.replace(" ", "-")


def run_tour(out: str | Path = "causalnet-tour", *, renderer: str = "auto", echo: Callable[[str], Any] | None = None) -> Path:
    """Run every section of :data:`TOUR_SECTIONS`, writing files and ``report.md`` into `out`.

    Parameters
    ----------
    out : str or path-like
        Output directory (created if needed).
    renderer : {"auto", "dot", "graphviz-pure", "none"}
        Renderer for SVG diagrams; ``"none"``, or no renderer on ``PATH``,
        leaves DOT files only.
    echo : callable, optional
        Called with each section's markdown as it is produced (the CLI prints).

    Returns
    -------
    pathlib.Path
        The path of ``report.md``.
    """
    if renderer != "none":
        find_renderer(renderer)  # validates the name
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ctx = TourContext(out=out, renderer=renderer)
    exe = None if renderer == "none" else find_renderer(renderer)
    if exe is None:
        how = ("no SVG renderer found: install Graphviz (`apt-get install graphviz`) or "
               "`pip install causalnet[render]` to get SVGs; DOT files are written instead")
    else:
        how = f"diagrams rendered to SVG with `{Path(exe).name}`"
    parts = []
    for title, fn in TOUR_SECTIONS:
        body = fn(ctx)
        part = f"## {title}\n\n{body.strip()}\n"
        parts.append(part)
        if echo is not None:
            echo(part)
    toc = "\n".join(f"- [{title}](#{_anchor(title)})" for title, _ in TOUR_SECTIONS)
    head = (
        "# causalnet tour\n\n"
        f"Generated by `causalnet tour`; {how}.\n\n"
        "`A ⊥ B | C` reads \"A and B are d-separated given C\".\n\n"
        f"{toc}\n"
    )
    notes = "\n## Notes\n\n" + "\n".join(f"- {n}" for n in ctx.notes) + "\n" if ctx.notes else ""
    report = out / "report.md"
    report.write_text(head + "\n" + "\n".join(parts) + notes, encoding="utf-8")
    return report


# -- entry point ------------------------------------------------------------------


def _parser() -> _Parser:
    p = _Parser(prog=_PROG, description="Causal DAGs: d-separation, adjustment sets, diagrams.")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    graph_help = "a graph file (dagitty-like text or JSON), gallery:NAME, or graph text like 'A -> B'"

    t = sub.add_parser("tour", help="run the guided tour and write a report with diagrams")
    t.add_argument("--out", default="causalnet-tour", help="output directory (default: ./causalnet-tour)")
    t.add_argument("--renderer", default="auto", choices=["auto", "dot", "graphviz-pure", "none"])
    t.set_defaults(func=_cmd_tour)

    d = sub.add_parser("dsep", help="are X and Y d-separated given Z?")
    d.add_argument("graph", help=graph_help)
    d.add_argument("x", help="node or comma-separated nodes")
    d.add_argument("y", help="node or comma-separated nodes")
    d.add_argument("--given", "-z", action="append", default=[], help="conditioning nodes (comma-separated; repeatable)")
    d.set_defaults(func=_cmd_dsep)

    a = sub.add_parser("adjust", help="adjustment sets for the effect of X on Y")
    a.add_argument("graph", help=graph_help)
    a.add_argument("x", help="treatment node(s)")
    a.add_argument("y", help="outcome node(s)")
    a.set_defaults(func=_cmd_adjust)

    w = sub.add_parser("draw", help="draw a graph (SVG/PNG/DOT; DOT on stdout without -o)")
    w.add_argument("graph", help=graph_help)
    w.add_argument("-o", "--output", help="output file; the format comes from its suffix (.svg, .png, .dot)")
    w.add_argument("--format", choices=["svg", "png", "dot"], help="override the format given by the suffix")
    w.add_argument("--highlight", help="a path to highlight, comma-separated (A,B,C)")
    w.add_argument("--do", action="append", default=[], help="nodes to intervene on (drawn with incoming edges cut)")
    w.add_argument("--given", "-z", action="append", default=[], help="nodes to mark as a separating set")
    w.add_argument("--clusters", action="store_true", help="box nodes by their dotted name prefix")
    w.add_argument("--title")
    w.add_argument("--rankdir", default="TB", choices=["TB", "LR", "BT", "RL"])
    w.add_argument("--renderer", default="auto", choices=["auto", "dot", "graphviz-pure"])
    w.set_defaults(func=_cmd_draw)

    q = sub.add_parser("query", help='answer a query string, e.g. "P(Wet | do(Sprinkler=on))"')
    q.add_argument("model", help="gallery:NAME or a .bif/.bif.gz/.xmlbif/.json model file")
    q.add_argument("query", help='P(Y | do(X=1), Z=0), P(Y=1 | ...), or counterfactual P(Y_{X=0}=1 | X=1, Y=1)')
    q.add_argument("--method", default="auto", choices=["auto", "exact", "sampling"])
    q.add_argument("--seed", type=int, default=0)
    q.set_defaults(func=_cmd_query)

    s = sub.add_parser("gallery", help="list the named graphs and models")
    s.set_defaults(func=_cmd_gallery)
    return p


def _version() -> str:
    from . import __version__

    return __version__


def _one_line(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return " | ".join(part.strip() for part in text.splitlines() if part.strip())


def main(argv: list[str] | None = None) -> int:
    """Run the ``causalnet`` command; returns the exit status (2 on a user error)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            raise _UsageError(f"choose a command: tour, dsep, adjust, draw, query, gallery (see '{_PROG} --help')")
        return args.func(args)
    except SystemExit as e:  # --help, --version
        return e.code if isinstance(e.code, int) else 0
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        return 130
    except (_UsageError, CausalNetError, OSError) as e:
        print(f"{_PROG}: error: {_one_line(e)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
