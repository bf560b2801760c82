"""The tour's model sections: discrete and Gaussian queries, HMM, CRF, transformer, Cauchy head.

Each section builds a small model, asks it the questions its family is for (a query, a
do, a counterfactual, training and decoding) and draws it through the
:class:`~causalnet.cli.tour_context.TourContext`. :data:`MODEL_SECTIONS` lists them in
tour order.
"""

from __future__ import annotations

import numpy as np

from .. import (
    gallery,
    models,  # each family loads when its section runs (`causalnet.models` re-exports them lazily)
)
from ..errors import CausalNetError
from ..inference.cauchy import cauchy_marginals
from .tour_context import Section, TourContext

__all__ = ["MODEL_SECTIONS"]


def _section_models(ctx: TourContext) -> str:
    """Discrete and Gaussian models: a query, a do-query, a counterfactual, batched evidence."""
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
        lines += ["", "(ALARM from the bnlearn repository is not available in this installation.)"]
    if alarm is not None:
        d = alarm.query("P(HYPOVOLEMIA | BP=LOW, HR=HIGH)")
        lines += ["", f"ALARM (37 nodes, read from the bnlearn repository's BIF file): P(HYPOVOLEMIA=TRUE | BP=LOW, HR=HIGH) = "
                      f"{d['TRUE']:.4f} ({d.method})."]
    return "\n".join(lines)




def _section_transformer(ctx: TourContext) -> str:
    """A small encoder: run it, ablate a head, report the effect, draw the folded and expanded views."""
    m = models.transformer.encoder(layers=2, d_model=16, heads=4, d_ff=32, vocab=20, seed=0)
    tokens = np.random.default_rng(0).integers(0, 20, size=(4, 8))
    base = m.forward({"x": tokens})
    lines = ["A 2-layer encoder (d_model 16, 4 heads, vocabulary 20, random weights) is a CausalModel "
             f"of {len(m.nodes)} tensor nodes named after the Bayesuvius chapter (e, Q, K, V, P, A, O, N, F, n).", ""]
    effects = []
    for h in range(4):
        out = models.transformer.ablate(m, models.transformer.head(m, "enc.1.attn.P", h)).forward({"x": tokens}, keep=["n"])["n"]
        effects.append(float(np.sqrt(np.mean((out - base["n"]) ** 2))))
    lines.append("Zero-ablating each head of layer 1 (a `do` on its attention weights) moves the memory `n` by "
                 "(RMS): " + ", ".join(f"head {h}: {e:.4f}" for h, e in enumerate(effects)) + ".")
    med = models.transformer.mediation(m, {"x": tokens}, {"x": np.roll(tokens, 1, axis=1)},
                       [models.transformer.head(m, "enc.1.attn.A", h) for h in range(2)],
                       lambda tr: tr["n"][:, 0, 0])
    for label, eff in med.items():
        e = eff.mean()
        lines.append(f"- mediation through {label}: total {e['total']:+.4f}, natural direct {e['direct']:+.4f}, "
                     f"natural indirect {e['indirect']:+.4f} (interaction {e['total'] - e['direct'] - e['indirect']:+.4f})")
    dec = models.transformer.decoder(layers=1, d_model=8, heads=2, d_ff=16, vocab=10, seed=1)
    g = models.transformer.position_graph(dec, 5)
    lines += ["", "In a decoder the causal mask makes the output at position 3 d-separated from later tokens: "
              f"`P[3] ⊥ {{x[4]}}` is {g.d_separated({'x[4]'}, {'P[3]'})}, `P[3] ⊥ x[2]` is "
              f"{g.d_separated({'x[2]'}, {'P[3]'})}.", ""]
    layer = models.transformer.encoder_layer(d_model=8, heads=2, d_ff=16, seed=0)
    expanded = models.transformer.encoder_layer(d_model=8, heads=2, d_ff=16, seed=0, view="expanded")
    lines += ["The diagrams draw one layer of the same kind, smaller so that it reads (d_model 8, 2 heads).", ""]
    lines += [ctx.diagram(layer, "encoder-layer-folded", "one encoder layer, folded view (heads as an axis of P)",
                          **models.transformer.diagram_options(layer)), ""]
    lines += [ctx.diagram(expanded, "encoder-layer-expanded", "the same layer, expanded view (one cluster per head)",
                          **models.transformer.diagram_options(expanded)), ""]
    abl = models.transformer.ablate(expanded, "enc.0.attn.head.1.P")
    lines += [ctx.diagram(abl, "encoder-layer-ablated", "head 1 zero-ablated: do() on its attention weights "
                          "enc.0.attn.head.1.P, double-bordered; head 0 is untouched", **models.transformer.diagram_options(abl))]
    return "\n".join(lines)


def _section_cauchy(ctx: TourContext) -> str:
    """The CausalQwen head on a toy sequence in all five inference modes, and one counterfactual."""
    head = models.causal_head.CausalHead.initialise(vocab_size=6, hidden=4, num_id=5, seed=0)
    z = np.random.default_rng(0).normal(size=(1, 3, 4))
    lines = ["A CausalQwen head (vocabulary 6 with `<NUM>` = 5, width 4) on backbone features of a 3-token "
             "sequence. The individual U ~ Cauchy(loc_U, scale_U) is abducted from the context; decisions "
             "S_k and the number Y are linear in U and so exactly Cauchy.", ""]
    for mode in models.causal_head.MODES:
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
    truth = models.hmm.HMM(3, "categorical", startprob=[0.6, 0.3, 0.1],
                transmat=[[0.8, 0.15, 0.05], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]],
                emissionprob=[[0.7, 0.2, 0.05, 0.05], [0.1, 0.6, 0.2, 0.1], [0.05, 0.05, 0.3, 0.6]])
    X, Z = truth.sample(3000, seed=0)
    lengths = [100] * 30
    model = models.hmm.HMM(3, "categorical", n_symbols=4, n_iter=50, n_init=3, seed=0).fit(X, lengths)
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
    X, y = models.crf.synthetic_tagging(500, mean_len=12, n_labels=5, n_words=2000, seed=0)
    train, test = slice(0, 400), slice(400, 500)
    crf = models.crf.CRF(c1=0.05, c2=0.05, max_iterations=60).fit(X[train], y[train])
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
    gen = m.query("y[2]", evidence=models.crf.factor_evidence(m))
    fast = crf.query("y[2]", sent[:4])
    lines.append(f"- as a DAG with factor nodes observed true, the generic engine gives P(y[2]) equal to the chain "
                 f"engine's: max difference {float(np.abs(gen.probs - fast.probs).max()):.1e}")
    lines += ["", ctx.diagram(m, "crf-factor-graph", "the CRF over 4 tokens: labels y, tokens x, factor nodes f, g",
                              observed=set(models.crf.factor_evidence(m)) | {f"x[{t}]" for t in range(4)})]
    return "\n".join(lines)


#: The model sections, in tour order: ``(title, section)``.
MODEL_SECTIONS: list[tuple[str, Section]] = [
    ("Models: query, do and counterfactual", _section_models),
    ("HMM: fit, decode, do, counterfactual", _section_hmm),
    ("CRF: train, decode, do on a token", _section_crf),
    ("Transformers: ablation, mediation, causal masks", _section_transformer),
    ("The CausalQwen Cauchy head: five inference modes", _section_cauchy),
]
