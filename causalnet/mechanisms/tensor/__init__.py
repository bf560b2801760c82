"""Tensor operations as deterministic mechanisms: the nodes of neural networks.

Each class here is the structural equation of one tensor node, ``x = f(parents)``
with no noise of its own (``deterministic = True``, kind ``"tensor"``). A
network is a :class:`~causalnet.model.CausalModel` of such nodes, so a ``do``
on any node is an activation patch and every graph question (ancestors,
d-separation) is asked of the network itself. The transformer builders in
:mod:`causalnet.models.transformer` are made of these ops.

One file per idea: :mod:`.shapes` (sizes and argument checks), :mod:`.base` (the
op interface, Input, Identity), :mod:`.linear`, :mod:`.attention`,
:mod:`.normalisation`, :mod:`.activations`, :mod:`.structural`, and
:mod:`.fused` (one-pass numba kernels the compiled plans use on small inputs).

Values are batch-first, ``(n, *shape)``, computed in ``float64`` by default
(``dtype="float32"`` on any op for speed). Weights follow the PyTorch layout
(``Linear`` weight ``(out, in)``, ``Embedding`` weight ``(L, d)``), so a
PyTorch state dict maps onto them without transposes.

Shapes are checked twice: when the model is built (from the shapes the
:class:`Input` roots declare, where ``None`` is a free size such as the
sequence length) and when it runs. A :class:`~causalnet.errors.ShapeError`
names the node, the op, the parent and both shapes, e.g.
``node 'enc.0.attn.Q' (Linear) expects (n, ?, 64) from 'e', got (2, 7, 48)``.

Scaled dot-product attention is two nodes, so the attention weights are a node
of their own: ``P = AttentionWeights(Q, K)`` (scores, scale, masks, softmax)
and ``A = Attention(P, V)``. The fine-grained chain of the Bayesuvius chapter
is available too: ``B = Scores(Q, K)``, ``S = Scale(B)``, ``M = Mask(S)``,
``P = Softmax(M)``. :class:`MultiHeadAttention` is the whole block in one node
(split -> per-head attention -> concat -> output projection).

Masks follow PyTorch: a padding mask is a boolean ``(n, S)`` node that is True
at padding positions (keys that must not be attended to); ``causal=True``
blocks keys after the query. A query row whose keys are all masked gets
all-zero weights (PyTorch gives NaN there).

Symbols: ``n`` batch, ``T`` query positions, ``S`` key positions, ``h``
heads, ``d`` width (``D = h * d_head``), ``L`` vocabulary size.

References
----------
.. [1] Vaswani et al., "Attention is all you need", NeurIPS 2017.
.. [2] R. R. Tucci, "Bayesuvius", chapter "Transformer Networks" (node names
   e, Q, K, V, B, S, M, P, A, O, N, F).

Examples
--------
>>> import numpy as np
>>> import causalnet as cn
>>> from causalnet.mechanisms import tensor as T
>>> rng = np.random.default_rng(0)
>>> m = cn.CausalModel({
...     "e": T.Input((None, 4)),
...     "Q": T.Linear("e", rng.standard_normal((4, 4))),
...     "K": T.Linear("e", rng.standard_normal((4, 4))),
...     "V": T.Linear("e", rng.standard_normal((4, 4))),
...     "P": T.AttentionWeights(["Q", "K"], heads=2, causal=True),
...     "A": T.Attention(["P", "V"], heads=2),
... })
>>> m.spec("P").shape
(2, None, None)
>>> tr = m.forward({"e": rng.standard_normal((3, 5, 4))})
>>> tr["A"].shape, bool(np.allclose(tr["P"].sum(-1), 1.0))
((3, 5, 4), True)
"""

from ...runtime import lazy_exports

__all__ = [
    "TensorOp",
    "Input",
    "Identity",
    "Linear",
    "Affine",
    "Embedding",
    "PositionalEncoding",
    "LearnedPositions",
    "Scores",
    "Scale",
    "Mask",
    "Softmax",
    "AttentionWeights",
    "Attention",
    "MultiHeadAttention",
    "LayerNorm",
    "ReLU",
    "GELU",
    "Tanh",
    "Sigmoid",
    "Add",
    "Mul",
    "Interpolate",
    "Zeros",
    "Concat",
    "Split",
    "Reshape",
    "Transpose",
    "Take",
    "FeedForward",
    "sinusoidal_encoding",
    "as_int",
    "as_real",
    "float_dtype",
    "check_output",
    "check_size",
    "fmt_shape",
]

# Re-exported on first use (PEP 562): importing the package loads none of these modules.
__getattr__, __dir__ = lazy_exports(__name__, {
    "GELU": ".activations:GELU",
    "ReLU": ".activations:ReLU",
    "Sigmoid": ".activations:Sigmoid",
    "Tanh": ".activations:Tanh",
    "Attention": ".attention:Attention",
    "AttentionWeights": ".attention:AttentionWeights",
    "Mask": ".attention:Mask",
    "MultiHeadAttention": ".attention:MultiHeadAttention",
    "Scale": ".attention:Scale",
    "Scores": ".attention:Scores",
    "Softmax": ".attention:Softmax",
    "Identity": ".base:Identity",
    "Input": ".base:Input",
    "TensorOp": ".base:TensorOp",
    "Affine": ".linear:Affine",
    "Embedding": ".linear:Embedding",
    "FeedForward": ".linear:FeedForward",
    "LearnedPositions": ".linear:LearnedPositions",
    "Linear": ".linear:Linear",
    "PositionalEncoding": ".linear:PositionalEncoding",
    "sinusoidal_encoding": ".linear:sinusoidal_encoding",
    "LayerNorm": ".normalisation:LayerNorm",
    "as_int": ".shapes:as_int",
    "as_real": ".shapes:as_real",
    "check_output": ".shapes:check_output",
    "check_size": ".shapes:check_size",
    "float_dtype": ".shapes:float_dtype",
    "fmt_shape": ".shapes:fmt_shape",
    "Add": ".structural:Add",
    "Concat": ".structural:Concat",
    "Interpolate": ".structural:Interpolate",
    "Mul": ".structural:Mul",
    "Reshape": ".structural:Reshape",
    "Split": ".structural:Split",
    "Take": ".structural:Take",
    "Transpose": ".structural:Transpose",
    "Zeros": ".structural:Zeros",
})
