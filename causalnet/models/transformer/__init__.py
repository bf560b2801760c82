"""Transformers as executable causal DAGs.

The builders here return :class:`~causalnet.model.CausalModel` objects made of
the deterministic tensor ops of :mod:`causalnet.mechanisms.tensor`, with the
node names of the Bayesuvius chapter "Transformer Networks" [2]_. Running the
model is ``model.forward({"x": tokens})``; every internal node can be read from
the returned Trace, intervened on with ``model.do`` (activation patching,
head ablation), patched from another run (:func:`interchange`), patched along
one edge only (:func:`path_patch`), and analysed for causal mediation
(:func:`mediation`). :func:`position_graph` unrolls a model into one node per
sequence position so that d-separation shows what a causal mask allows.

Node names
----------
One attention block under prefix ``p`` (``enc.0.attn``, ``dec.0.self``;
cross-attention ``dec.0.cross`` uses the lower-case letters of [2]_)::

    p.Q  p.K  p.V        projections          (n, T, D)
    p.B  p.S  p.M        scores, scaled, masked (only with scores=True)
    p.P                  attention weights    (n, h, T, S)
    p.A                  heads concatenated   (n, T, D)
    p.O                  output projection    (n, T, d)

The expanded view adds one cluster per head, ``p.head.1.Q`` ... ``p.head.1.P``
``(n, T, S)`` ... ``p.head.1.A``, and ``p.A`` concatenates the heads.

Encoder layer ``enc.i``: attention ``enc.i.attn``, ``enc.i.N = norm(e + O)``,
``enc.i.F = feed_forward(N)``, ``enc.i.n = norm(N + F)``. Decoder layer
``dec.i``: masked self-attention ``dec.i.self``, ``dec.i.J = norm(e + O)``,
cross-attention ``dec.i.cross`` (queries from ``J``, keys and values from the
memory ``n``), ``dec.i.j = norm(J + o)``, ``dec.i.F``, ``dec.i.Y = norm(j + F)``.
A decoder-only layer has no cross-attention: ``J``, ``F``, ``Y``. With
``norm_first=True`` (pre-LN) the norms become nodes ``ln1``, ``ln2``, ``ln3``
and ``N``, ``J``, ``j``, ``n``, ``Y`` are plain residual sums.

Stacks: token ids ``x`` ``(n, T)`` (when there is an embedding table), the
embedding ``e`` (``e0`` before positional encoding), the layers, then the
encoder output ``n``, or for a decoder ``Y``, logits ``I`` and next-token
probabilities ``P``. An encoder-decoder model prefixes the target side with
``dec.``: ``dec.x``, ``dec.e``. Padding masks are roots ``pad`` (source, or
the only sequence) and ``dec.pad`` (target), True at padding.

Weights use the keys of PyTorch state dicts (``self_attn.in_proj_weight``,
``linear1.weight``, ``norm1.weight``, ``layers.0.``...), so
``from_torch({k: v.numpy() for k, v in module.state_dict().items()}, heads=8)``
rebuilds an ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``,
``nn.TransformerDecoderLayer``, their stacks, or an ``nn.Transformer``. PyTorch
is never imported here.

One file per idea: :mod:`.weights` (state dicts, random weights), :mod:`.build`
(the builders), :mod:`.checkpoints` (``from_torch``), :mod:`.generate`,
:mod:`.interpret` (sites, ablation, interchange, path patching, mediation),
:mod:`.unroll` (``position_graph``), :mod:`.diagrams` and :mod:`.saving`
(``save`` / ``load``: JSON plus ``.npz``, exact, no pickle).

Symbols: ``n`` batch, ``T`` target (or only) positions, ``S`` source positions,
``h`` heads, ``d`` model width, ``L`` vocabulary, ``Λ`` layers.

References
----------
.. [1] Vaswani et al., "Attention is all you need", NeurIPS 2017.
.. [2] R. R. Tucci, "Bayesuvius", chapter "Transformer Networks".
.. [3] Vig et al., "Investigating gender bias in language models using causal
   mediation analysis", NeurIPS 2020.
.. [4] Geiger et al., "Causal abstractions of neural networks", NeurIPS 2021
   (interchange interventions); Wang et al., "Interpretability in the wild",
   ICLR 2023 (path patching).

Examples
--------
>>> import numpy as np
>>> from causalnet.models import transformer as tf
>>> m = tf.encoder_layer(d_model=8, heads=2, d_ff=16, seed=0)
>>> [v for v in m.nodes if v.startswith("enc.0")][:5]
['enc.0.attn.Q', 'enc.0.attn.K', 'enc.0.attn.V', 'enc.0.attn.P', 'enc.0.attn.A']
>>> tr = m.forward({"e": np.zeros((2, 5, 8))})
>>> tr["enc.0.attn.P"].shape, tr["enc.0.n"].shape
((2, 2, 5, 5), (2, 5, 8))
"""

from ...runtime import lazy_exports
from .generate import generate  # a submodule shares the name: bound now

__all__ = [
    "attention",
    "encoder_layer",
    "decoder_layer",
    "encoder",
    "decoder",
    "transformer",
    "from_torch",
    "from_huggingface",
    "generate",
    "Site",
    "sites",
    "head",
    "ablate",
    "interchange",
    "rewire",
    "path_patch",
    "mediation",
    "Effects",
    "position_graph",
    "diagram_options",
    "save",
    "load",
]

# Re-exported on first use (PEP 562): importing the package loads none of these modules.
__getattr__, __dir__ = lazy_exports(__name__, {
    "attention": ".build:attention",
    "decoder": ".build:decoder",
    "decoder_layer": ".build:decoder_layer",
    "encoder": ".build:encoder",
    "encoder_layer": ".build:encoder_layer",
    "transformer": ".build:transformer",
    "from_torch": ".checkpoints:from_torch",
    "diagram_options": ".diagrams:diagram_options",
    "from_huggingface": ".huggingface:from_huggingface",
    "Effects": ".interpret:Effects",
    "Site": ".interpret:Site",
    "ablate": ".interpret:ablate",
    "head": ".interpret:head",
    "interchange": ".interpret:interchange",
    "mediation": ".interpret:mediation",
    "path_patch": ".interpret:path_patch",
    "rewire": ".interpret:rewire",
    "sites": ".interpret:sites",
    "load": ".saving:load",
    "save": ".saving:save",
    "position_graph": ".unroll:position_graph",
})
