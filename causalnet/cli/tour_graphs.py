"""The tour's graph sections: d-separation and adjustment on the gallery's graphs.

Each graph gets a :class:`TourGraph` spec (the effect to adjust for, the d-separation
questions, the diagrams); :func:`graph_section` turns a spec into markdown with the same
sentences the ``dsep`` and ``adjust`` commands print. :data:`GRAPH_SECTIONS` lists the
``(title, section)`` pairs in tour order.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from .. import gallery
from .graphs import adjust_lines, dsep_line
from .tour_context import Section, TourContext

__all__ = ["GRAPH_SECTIONS", "TourGraph", "graph_section"]


@dataclass(frozen=True)
class TourGraph:
    """One graph of the tour: its gallery name, the effect to adjust for, questions and diagrams."""

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
    TourGraph(
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
    TourGraph(
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
    TourGraph(
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
    TourGraph(
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


def graph_section(spec: TourGraph, ctx: TourContext) -> str:
    """The markdown of one graph section: diagrams, edges, d-separation, independencies, adjustment."""
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
        lines.append(f"- {dsep_line(h, [x], [y], list(given))}" + (f" ({where})" if where else ""))
    basis = g.implied_independencies()
    lines += ["", "**Implied independencies** (basis):", ""]
    lines += [f"- {s}" for s in basis] if basis else ["- none"]
    x, y = spec.effect
    lines += ["", f"**Adjustment** for the effect of {x} on {y}:", ""]
    lines += [f"- {line}" for line in adjust_lines(g, [x], [y])]
    if spec.remark:
        lines += ["", spec.remark]
    return "\n".join(lines)


def _graph_section_fn(spec: TourGraph) -> Section:
    def section(ctx: TourContext) -> str:
        return graph_section(spec, ctx)

    section.__name__ = f"_section_{spec.name.replace('-', '_')}"
    return section



#: The graph sections, in tour order: ``(title, section)``.
GRAPH_SECTIONS: list[tuple[str, Section]] = [(f"Graph: {spec.name}", _graph_section_fn(spec)) for spec in _TOUR_GRAPHS]
