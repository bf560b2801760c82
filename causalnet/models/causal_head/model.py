"""The CausalHead: abduction, action, inference modes, fitting, generation, and the head as a CausalModel."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...arguments import check_int, check_real
from ...errors import EvidenceError, ModelError, NumericalError, ShapeError
from ...io import bundle
from ...mechanisms.base import as_generator
from ...mechanisms.cauchy import CauchyLinear
from ...mechanisms.function import Deterministic
from ...mechanisms.tensor import Input
from ...model import CausalModel
from ...progress import progress_bar
from .losses import head_loss
from .outputs import HeadOutput, numeric_embedding, real_array, softplus
from .training import adam, small_blas

__all__ = ["CausalHead", "gradient_check", "sample_logits", "MODES", "PARAMS"]

MODES = ("standard", "causal", "individual", "noise", "softmax")
#: parameter names and their shapes in terms of V, C, H
PARAMS = {
    "W_loc": ("C", "H"), "b_loc": ("C",), "W_scale": ("C", "H"), "b_scale": ("C",), "b_noise": ("C",),
    "W_cls": ("V", "C"), "b_cls": ("V",), "thresholds": ("V",), "W_reg": ("C",), "b_reg": (),
}
_TRAINABLE = tuple(PARAMS)
_KIND = "causalnet.CausalHead"


class CausalHead:
    """The CausalQwen abduction/action head on backbone features.

    Parameters
    ----------
    params : mapping name -> array
        ``W_loc (C, H)``, ``b_loc (C,)``, ``W_scale (C, H)``, ``b_scale (C,)``,
        ``b_noise (C,)``, ``W_cls (V, C)``, ``b_cls (V,)``, ``thresholds (V,)``,
        ``W_reg (C,)``, ``b_reg ()``; optionally ``embed (V, H)`` and
        ``w_num (H,)`` for the numerical-aware embedding.
    num_id : int
        Id of the ``<NUM>`` token.
    alpha : float, default 0
        Gate floor of the regression loss (``α = 1``: ungated).
    lam : float, default 1
        Weight ``λ`` of the regression loss.
    detach_gate : bool, default False
        When True the gate ``α + (1 − α) P_<NUM>`` is a weight only: no
        gradient flows from the regression loss into ``P_<NUM>`` (otherwise
        the exact gradient of the stated loss, which also lowers
        ``P_<NUM>`` wherever the NLL is positive).

    Raises
    ------
    ShapeError
        A parameter of the wrong shape (thresholds that do not match the
        vocabulary, ...).
    ModelError
        Missing or non-finite parameters, `num_id` outside the vocabulary,
        `alpha` outside [0, 1].

    See Also
    --------
    CausalHead.initialise : the CausalQwen initialisation.
    """

    def __init__(self, params: Mapping[str, Any], *, num_id: int, alpha: float = 0.0, lam: float = 1.0,
                 detach_gate: bool = False) -> None:
        p = {}
        missing = [k for k in PARAMS if k not in params]
        if missing:
            raise ModelError(f"CausalHead: missing parameters {missing}")
        unknown = [k for k in params if k not in PARAMS and k not in ("embed", "w_num")]
        if unknown:
            raise ModelError(f"CausalHead: unknown parameters {unknown}; expected {list(PARAMS)} (+ embed, w_num)")
        for k, v in params.items():
            try:
                a = np.array(v, dtype=np.float64)
            except (TypeError, ValueError):
                raise ModelError(f"CausalHead: parameter {k!r} is not numeric") from None
            if not np.all(np.isfinite(a)):
                raise ModelError(f"CausalHead: parameter {k!r} contains NaN or inf")
            p[k] = a
        V, C = p["W_cls"].shape if p["W_cls"].ndim == 2 else (None, None)
        if V is None:
            raise ShapeError(f"CausalHead: W_cls must be (V, C), got {p['W_cls'].shape}")
        if p["W_loc"].ndim != 2:
            raise ShapeError(f"CausalHead: W_loc must be (C, H), got {p['W_loc'].shape}")
        H = p["W_loc"].shape[1]
        dims = {"V": V, "C": C, "H": H}
        for k, sym in PARAMS.items():
            want = tuple(dims[s] for s in sym)
            if p[k].shape != want:
                raise ShapeError(f"CausalHead: {k} has shape {p[k].shape}, expected {want} "
                                 f"({', '.join(sym) or 'a scalar'} with V={V}, C={C}, H={H})")
        if ("embed" in p) != ("w_num" in p):
            raise ModelError("CausalHead: give both embed and w_num, or neither")
        if "embed" in p and (p["embed"].shape != (V, H) or p["w_num"].shape != (H,)):
            raise ShapeError(f"CausalHead: embed must be ({V}, {H}) and w_num ({H},), got {p['embed'].shape} and "
                             f"{p['w_num'].shape}")
        if not isinstance(num_id, (int, np.integer)) or not 0 <= num_id < V:
            raise ModelError(f"CausalHead: num_id must be a token id in 0..{V - 1}, got {num_id!r}")
        if not 0.0 <= float(alpha) <= 1.0:
            raise ModelError(f"CausalHead: alpha must lie in [0, 1], got {alpha!r}")
        if not np.isfinite(lam) or lam < 0:
            raise ModelError(f"CausalHead: lam must be finite and >= 0, got {lam!r}")
        self._p = p
        self.num_id = int(num_id)
        self.alpha = float(alpha)
        self.detach_gate = bool(detach_gate)
        self.lam = float(lam)
        self.history_: dict = {}
        self._abs_cache: tuple | None = None

    @classmethod
    def initialise(cls, vocab_size: int, hidden: int, *, num_id: int, causal_dim: int | None = None,
                   lm_head: np.ndarray | None = None, embed: np.ndarray | None = None,
                   w_num: np.ndarray | None = None, scale_init: float = 1.0, noise_init: float = 0.1,
                   alpha: float = 0.0, lam: float = 1.0, detach_gate: bool = False,
                   seed: Any = None) -> CausalHead:
        """The CausalQwen initialisation (knowledge transfer from a base LM head).

        ``W_loc = I``, ``b_loc = 0`` (so ``loc_U = z``); ``W_scale = 0``,
        ``b_scale = scale_init`` (a constant scale ``softplus(scale_init)``);
        ``W_cls = lm_head`` (or ``N(0, 1/C)`` entries), ``b_cls = 0``; ``W_reg``
        Xavier-normal, ``b_reg = 0``; thresholds 0; ``b_noise = noise_init``;
        ``w_num ~ N(0, 1/H)`` and ``embed ~ N(0, 1/H)`` unless given.

        Parameters
        ----------
        vocab_size, hidden : int
            V (including ``<NUM>``) and H.
        num_id : int
        causal_dim : int, optional
            C; default H (the identity initialisation needs C = H; otherwise
            ``W_loc`` is the rectangular identity).
        lm_head : ndarray of shape (V, C), optional
        embed : ndarray of shape (V, H), optional
        w_num : ndarray of shape (H,), optional
        scale_init, noise_init : float
        alpha, lam, detach_gate : see the class
        seed : int or Generator, optional
        """
        V = check_int(vocab_size, "vocab_size", low=1)
        H = check_int(hidden, "hidden", low=1)
        C = H if causal_dim is None else check_int(causal_dim, "causal_dim", low=1)
        check_int(num_id, "num_id", low=0, high=V - 1)
        rng = as_generator(seed)
        p = {
            "W_loc": np.eye(C, H), "b_loc": np.zeros(C),
            "W_scale": np.zeros((C, H)), "b_scale": np.full(C, float(scale_init)),
            "b_noise": np.full(C, float(noise_init)),
            "W_cls": rng.normal(0.0, 1.0 / np.sqrt(C), size=(V, C)) if lm_head is None else np.array(lm_head),
            "b_cls": np.zeros(V), "thresholds": np.zeros(V),
            "W_reg": rng.normal(0.0, np.sqrt(2.0 / (C + 1)), size=C), "b_reg": np.zeros(()),
            "embed": rng.normal(0.0, 1.0 / np.sqrt(H), size=(V, H)) if embed is None else np.array(embed),
            "w_num": rng.normal(0.0, 1.0 / np.sqrt(H), size=H) if w_num is None else np.array(w_num),
        }
        return cls(p, num_id=num_id, alpha=alpha, lam=lam, detach_gate=detach_gate)

    # -- parameters ---------------------------------------------------------------------------

    @property
    def params(self) -> dict:
        """Copies of the parameters (name -> array)."""
        return {k: v.copy() for k, v in self._p.items()}

    def set_params(self, **params) -> CausalHead:
        """Replace some parameters (validated like the constructor); returns self."""
        new = {**self._p, **params}
        other = CausalHead(new, num_id=self.num_id, alpha=self.alpha, lam=self.lam, detach_gate=self.detach_gate)
        self._p = other._p
        self._abs_cache = None
        return self

    # -- saving --------------------------------------------------------------------------------

    def meta(self) -> dict:
        """The head's settings as JSON values (``num_id``, ``alpha``, ``lam``, ``detach_gate``); the arrays are
        :attr:`params`."""
        return {"num_id": self.num_id, "alpha": self.alpha, "lam": self.lam, "detach_gate": self.detach_gate}

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any], params: Mapping[str, Any]) -> CausalHead:
        """The head with settings `meta` (as :meth:`meta` gives) and arrays `params`, validated as the constructor."""
        if not isinstance(meta, Mapping) or set(meta) != {"num_id", "alpha", "lam", "detach_gate"}:
            raise ModelError(f"CausalHead settings must be num_id, alpha, lam and detach_gate; got {meta!r}")
        if not isinstance(meta["detach_gate"], bool) or isinstance(meta["num_id"], bool) \
                or not all(isinstance(meta[k], (int, float)) and not isinstance(meta[k], bool) for k in ("alpha", "lam")):
            raise ModelError(f"CausalHead settings have the wrong types: {meta!r}")
        return cls(params, num_id=meta["num_id"], alpha=meta["alpha"], lam=meta["lam"],
                   detach_gate=meta["detach_gate"])

    def save(self, path) -> None:
        """Write the head to `path` (JSON: settings, history) and beside it an ``.npz`` of its parameters.

        No pickle; floats round-trip exactly; each file is written atomically (:mod:`causalnet.io.bundle`).
        """
        bundle.save(path, _KIND, {"settings": self.meta(), "history": self.history_}, self._p)

    @classmethod
    def load(cls, path) -> CausalHead:
        """Read a head written by :meth:`save`.

        Raises
        ------
        ModelFileNotFoundError
            If the JSON file or its ``.npz`` is missing.
        ModelError, ShapeError
            If either is damaged, of another kind, or holds parameters the constructor refuses.
        """
        meta, arrays = bundle.load(path, _KIND)
        history = meta.get("history", {})
        if set(meta) - {"settings", "history"} or not isinstance(history, dict) or not all(
                isinstance(v, list) and all(isinstance(x, (int, float)) for x in v) for v in history.values()):
            raise ModelError(f"{str(path)!r}: malformed CausalHead file (settings and a history of numbers expected)")
        head = cls.from_meta(meta.get("settings"), arrays)
        head.history_ = {k: list(v) for k, v in history.items()}
        return head

    @property
    def dims(self) -> dict:
        """``{"V": ..., "C": ..., "H": ...}``."""
        V, C = self._p["W_cls"].shape
        return {"V": V, "C": C, "H": self._p["W_loc"].shape[1]}

    def _abs_W(self) -> tuple[np.ndarray, np.ndarray]:
        W, w = self._p["W_cls"], self._p["W_reg"]
        c = self._abs_cache
        if c is None or c[0] is not W or c[1] is not w:
            c = self._abs_cache = (W, w, np.abs(W), np.abs(w))
        return c[2], c[3]

    # -- the pipeline ----------------------------------------------------------------------------

    def embed(self, input_ids, numeric_values=None) -> np.ndarray:
        """Numerical-aware embedding ``(n, T, H)`` (needs the ``embed`` and ``w_num`` parameters)."""
        if "embed" not in self._p:
            raise ModelError("this CausalHead has no embedding table; give embed and w_num")
        return numeric_embedding(self._p["embed"], self._p["w_num"], input_ids, numeric_values)

    def _check_z(self, z) -> np.ndarray:
        z = real_array(z, "features z")
        H = self._p["W_loc"].shape[1]
        if z.ndim < 2 or z.shape[-1] != H:
            raise ShapeError(f"the head expects features z of shape (n, T, {H}), got {z.shape}")
        if not np.all(np.isfinite(z)):
            raise EvidenceError("features z contain NaN or inf")
        return z

    def abduct(self, z) -> tuple[np.ndarray, np.ndarray]:
        """``(loc_U, scale_U)``, each ``(n, T, C)``, from features ``z`` (n, T, H)."""
        z = self._check_z(z)
        p = self._p
        loc = z @ p["W_loc"].T + p["b_loc"]                              # (n, T, C)
        scale = softplus(z @ p["W_scale"].T + p["b_scale"])              # (n, T, C)
        return loc, scale

    def action(self, loc_in: np.ndarray, scale_in: np.ndarray) -> tuple:
        """Decision laws from ``U' ~ Cauchy(loc_in, scale_in)``.

        Parameters
        ----------
        loc_in : ndarray of shape (n, T, C)
        scale_in : ndarray of shape (n, T, C) or (C,)
            A ``(C,)`` scale (causal modes) gives ``(V,)`` / scalar scales,
            broadcast (read-only views) to the output shapes.

        Returns
        -------
        loc_S (n, T, V), scale_S (n, T, V), loc_Y (n, T), scale_Y (n, T)
        """
        p = self._p
        aW, aw = self._abs_W()
        loc_S = loc_in @ p["W_cls"].T                                    # (n, T, V)
        loc_S += p["b_cls"]
        loc_Y = loc_in @ p["W_reg"] + p["b_reg"]                         # (n, T)
        scale_S = scale_in @ aW.T                                        # (n, T, V) or (V,)
        scale_Y = scale_in @ aw                                          # (n, T) or ()
        if np.ndim(scale_in) == 1:
            scale_S = np.broadcast_to(scale_S, loc_S.shape)
            scale_Y = np.broadcast_to(scale_Y, loc_Y.shape)
        return loc_S, scale_S, loc_Y, scale_Y

    def forward(self, z, *, mode: str = "standard", seed: Any = None, u=None, eps_seed=None,
                eps_noise=None) -> HeadOutput:
        """Decision distributions for features `z` under an inference mode.

        Parameters
        ----------
        z : ndarray of shape (n, T, H)
        mode : {"standard", "causal", "individual", "noise", "softmax"}
            See the module docstring.
        seed : int or Generator, optional
            Draws ``u`` (causal), ``eps_seed`` (individual) or ``eps_noise``
            (noise) when they are not given.
        u : ndarray of shape (n, T, C), optional
            A given individual (causal mode): ``U' ~ Cauchy(u, |b_noise|)``.
        eps_seed : ndarray of shape (C,) or (n, C), optional
            Individual factor in (0, 1) shared by all positions (individual mode).
        eps_noise : ndarray of shape (C,) or (n, C), optional
            Standard-Cauchy noise instance shared by all positions (noise mode).

        Returns
        -------
        HeadOutput
        """
        if mode not in MODES:
            raise ModelError(f"mode must be one of {list(MODES)}, got {mode!r}")
        z = self._check_z(z)
        with np.errstate(over="ignore", invalid="ignore"):
            loc_U, scale_U = self.abduct(z)
        n, C = loc_U.shape[0], loc_U.shape[-1]
        absb = np.abs(self._p["b_noise"])
        used_u = None
        if mode in ("standard", "softmax"):
            loc_in, scale_in = loc_U, scale_U + absb
        elif mode == "causal":
            if u is None:
                u = loc_U + scale_U * as_generator(seed).standard_cauchy(loc_U.shape)
            u = np.asarray(u, dtype=np.float64)
            if u.shape != loc_U.shape:
                raise ShapeError(f"u must have shape {loc_U.shape}, got {u.shape}")
            loc_in, scale_in, used_u = u, absb, u
        elif mode == "individual":
            if eps_seed is None:
                eps_seed = as_generator(seed).uniform(size=(n, C))
            e = self._per_row(eps_seed, n, C, "eps_seed")
            if np.any((e <= 0) | (e >= 1)):
                raise ModelError("eps_seed must lie strictly between 0 and 1")
            t = np.tan(np.pi * (e - 0.5))                                # (n, C)
            used_u = loc_U + scale_U * t.reshape((n,) + (1,) * (loc_U.ndim - 2) + (C,))
            loc_in, scale_in = used_u, absb
        else:  # noise
            if eps_noise is None:
                eps_noise = as_generator(seed).standard_cauchy((n, C))
            e = self._per_row(eps_noise, n, C, "eps_noise")
            loc_in = loc_U + (absb * e).reshape((n,) + (1,) * (loc_U.ndim - 2) + (C,))
            scale_in = scale_U
        with np.errstate(over="ignore", invalid="ignore"):
            loc_S, scale_S, loc_Y, scale_Y = self.action(loc_in, scale_in)
        for name, a in (("loc_U", loc_U), ("scale_U", scale_U), ("loc_S", loc_S), ("scale_S", scale_S),
                        ("loc_Y", loc_Y), ("scale_Y", scale_Y)):
            if not np.all(np.isfinite(a)):
                raise NumericalError(f"CausalHead.forward ({mode}): {name} overflowed float64 from finite features "
                                     f"(largest |z| {float(np.max(np.abs(z))):.3g}); rescale the features")
        return HeadOutput(loc_U, scale_U, loc_S, scale_S, loc_Y, scale_Y, self._p["thresholds"], mode, used_u)

    @staticmethod
    def _per_row(e, n: int, C: int, what: str) -> np.ndarray:
        e = np.asarray(e, dtype=np.float64)
        if e.shape == (C,):
            e = np.broadcast_to(e, (n, C))
        if e.shape != (n, C):
            raise ShapeError(f"{what} must have shape ({C},) or ({n}, {C}), got {e.shape}")
        if not np.all(np.isfinite(e)):
            raise ModelError(f"{what} contains NaN or inf")
        return e

    def predict(self, z, *, mode: str = "standard", seed: Any = None, **kw) -> tuple[np.ndarray, np.ndarray]:
        """``(tokens (n, T), values (n, T))`` under `mode` (argmax of the OvR or softmax probabilities, loc_Y)."""
        return self.forward(z, mode=mode, seed=seed, **kw).predict()

    # -- loss and gradients ------------------------------------------------------------------------

    def _batch(self, z, labels, targets, attention_mask):
        z = self._check_z(z)
        lead = z.shape[:-1]
        labels = np.asarray(labels)
        if labels.shape != lead or not np.issubdtype(labels.dtype, np.integer):
            raise ShapeError(f"labels must be integer ids of shape {lead}, got {labels.dtype} {labels.shape}")
        targets = np.zeros(lead) if targets is None else np.asarray(targets, dtype=np.float64)
        if targets.shape != lead:
            raise ShapeError(f"numeric targets must have shape {lead}, got {targets.shape}")
        mask = np.ones(lead, dtype=bool) if attention_mask is None else np.asarray(attention_mask).astype(bool)
        if mask.shape != lead:
            raise ShapeError(f"attention_mask must have shape {lead}, got {mask.shape}")
        V = self._p["W_cls"].shape[0]
        lab = np.where(mask, labels, 0)
        if lab.size and (lab.min() < 0 or lab.max() >= V):
            raise EvidenceError(f"labels must be token ids in 0..{V - 1} where attention_mask is set")
        num = mask & (lab == self.num_id)
        if not np.all(np.isfinite(np.where(num, targets, 0.0))):
            raise EvidenceError("numeric targets contain NaN or inf at <NUM> positions")
        H = z.shape[-1]
        return (z.reshape(-1, H), lab.reshape(-1), np.where(num, targets, 0.0).reshape(-1), mask.reshape(-1),
                num.reshape(-1))

    def loss(self, z, labels, targets=None, attention_mask=None) -> tuple[float, dict]:
        """Total loss and its parts (``cls``, ``reg``) on a batch.

        Parameters
        ----------
        z : ndarray of shape (n, T, H)
        labels : int array of shape (n, T)
            Next-token ids (``num_id`` where the next token is a number).
        targets : array of shape (n, T), optional
            True numbers at ``<NUM>`` labels (ignored elsewhere).
        attention_mask : bool array of shape (n, T), optional

        Returns
        -------
        total : float
        parts : dict with ``cls`` (mean classification loss), ``reg``
            (effective regression loss), ``n_cls``, ``n_num``
        """
        total, _, parts = self._loss(*self._batch(z, labels, targets, attention_mask), grad=False)
        return total, parts

    def loss_and_grad(self, z, labels, targets=None, attention_mask=None) -> tuple[float, dict, dict]:
        """Total loss, analytic gradients (name -> array, parameter shapes) and loss parts."""
        return self._loss(*self._batch(z, labels, targets, attention_mask), grad=True)

    def _loss(self, z, lab, y, mask, num, *, grad: bool):
        aW, aw = self._abs_W()
        return head_loss(self._p, aW, aw, z, lab, y, mask, num, num_id=self.num_id, alpha=self.alpha, lam=self.lam,
                         detach_gate=self.detach_gate, grad=grad)

    # -- training -----------------------------------------------------------------------------------

    def fit(self, z, labels, targets=None, attention_mask=None, *, steps: int = 300, lr: float = 0.01,
            batch_size: int | None = None, betas: tuple = (0.9, 0.999), weight_decay: float = 0.0,
            trainable=None, seed: Any = None, callback: Callable | None = None,
            progress: bool | None = None) -> CausalHead:
        """Train the head on frozen features with Adam and the analytic gradients.

        Parameters
        ----------
        z : ndarray of shape (n, T, H)
            Frozen backbone features.
        labels, targets, attention_mask : see :meth:`loss`
        steps : int
        lr : float
        batch_size : int, optional
            Sequences per step (default: all).
        betas : (float, float)
        weight_decay : float
            Decoupled (AdamW) decay on the weight matrices.
        trainable : iterable of parameter names, optional
            Default: every head parameter (not the embedding).
        seed : int or Generator, optional
            Mini-batch order.
        callback : callable, optional
            ``callback(step, loss, parts)`` after every step; returning
            ``False`` stops training.
        progress : bool or None, default None
            A tqdm bar over the steps: None shows it on a terminal or in a
            notebook and never when the ``CI`` environment variable is set
            (:func:`causalnet.progress.progress_bar`); False hides it.

        Returns
        -------
        self
            With ``history_`` = ``{"loss": [...], "cls": [...], "reg": [...]}``.

        Raises
        ------
        NumericalError
            When the loss, a gradient or a parameter leaves the finite numbers
            (a learning rate far too large); the message names the step and
            the learning rate, and the head keeps its parameters and history
            from before the call.
        """
        rows = self._batch(z, labels, targets, attention_mask)
        n = np.shape(labels)[0]
        names = tuple(_TRAINABLE if trainable is None else trainable)
        bad = [k for k in names if k not in PARAMS]
        if bad:
            raise ModelError(f"unknown trainable parameters {bad}; expected some of {list(PARAMS)}")
        steps = check_int(steps, "steps", low=0)
        lr = check_real(lr, "lr", positive=True)
        weight_decay = check_real(weight_decay, "weight_decay")
        if weight_decay < 0:
            raise ModelError(f"weight_decay must be >= 0, got {weight_decay!r}")
        if batch_size is not None:
            batch_size = check_int(batch_size, "batch_size", low=1)
        if not (isinstance(betas, (tuple, list)) and len(betas) == 2
                and all(0.0 <= check_real(b, "betas") < 1.0 for b in betas)):
            raise ModelError(f"betas must be two numbers in [0, 1), got {betas!r}")
        rng = as_generator(seed)
        hist: dict = {"loss": [], "cls": [], "reg": []}
        if progress is not None and not isinstance(progress, (bool, np.bool_)):
            raise ModelError(f"progress must be None, True or False, got {progress!r}")
        it = progress_bar(range(steps), progress=progress, desc="CausalHead.fit")
        per_seq = rows[0].shape[0] // max(n, 1)
        rows_per_step = per_seq * (n if batch_size is None else min(batch_size, n))
        saved = dict(self._p)
        try:
            with it, small_blas(rows_per_step * max(self._p["W_cls"].shape)), \
                    np.errstate(over="ignore", invalid="ignore", divide="ignore"):   # checked by name per step
                adam(self._p, names, lambda batch: self._loss(*batch, grad=True), rows, it, n, per_seq, batch_size, rng,
                     betas, lr, weight_decay, hist, progress, callback)
        except BaseException:
            self._p = saved                 # a failed fit leaves the head as it was
            self._abs_cache = None
            raise
        self.history_ = hist
        return self

    # -- evaluation ---------------------------------------------------------------------------------

    def evaluate(self, z, labels, targets=None, attention_mask=None, *, mode: str = "standard",
                 seed: Any = None) -> dict:
        """Metrics under `mode` (standard by default, i.e. deterministic).

        Returns
        -------
        dict
            ``accuracy`` (over attention_mask), ``num_precision``,
            ``num_recall``, ``num_f1`` (of predicting ``<NUM>``), ``reg_mae``
            and ``reg_mdae`` (|loc_Y − target| at true ``<NUM>`` positions),
            ``loss``, ``cls_loss``, ``reg_loss``, ``ovr_prob_sum_median``.
        """
        zz, lab, y, mask, num = self._batch(z, labels, targets, attention_mask)
        out = self.forward(np.asarray(z, dtype=np.float64), mode=mode, seed=seed)
        pred, val = out.predict()
        pred, val = pred.reshape(-1), val.reshape(-1)
        pnum = mask & (pred == self.num_id)
        tp = int((pnum & num).sum())
        prec = tp / int(pnum.sum()) if pnum.any() else float("nan")
        rec = tp / int(num.sum()) if num.any() else float("nan")
        err = np.abs(val[num] - y[num])
        total, _, parts = self._loss(zz, lab, y, mask, num, grad=False)
        sums = out.ovr_prob_sum().reshape(-1)[mask]
        return {
            "accuracy": float((pred[mask] == lab[mask]).mean()) if mask.any() else float("nan"),
            "num_precision": prec, "num_recall": rec,
            "num_f1": 2 * prec * rec / (prec + rec) if prec + rec > 0 else float("nan"),
            "reg_mae": float(err.mean()) if err.size else float("nan"),
            "reg_mdae": float(np.median(err)) if err.size else float("nan"),
            "loss": total, "cls_loss": parts["cls"], "reg_loss": parts["reg"],
            "ovr_prob_sum_median": float(np.median(sums)) if sums.size else float("nan"),
        }

    # -- generation ---------------------------------------------------------------------------------

    def generate(self, backbone: Callable, input_ids, numeric_values=None, *, max_new_tokens: int = 16,
                 mode: str = "standard", seed: Any = None, eos_id: int | None = None, top_k: int | None = None,
                 top_p: float | None = None, temperature: float = 1.0, eps_seed=None,
                 eps_noise=None) -> tuple[np.ndarray, np.ndarray]:
        """Autoregressive generation; numbers come from the regression channel.

        At each step the backbone maps the sequence so far to features, the
        head decides the next token under `mode`, and when ``<NUM>`` wins its
        value is ``loc_Y`` (appended to ``numeric_values``, 0 elsewhere).

        Parameters
        ----------
        backbone : callable
            ``backbone(input_ids (n, t), numeric_values (n, t)) -> z (n, t, H)``
            (causal: position t sees positions <= t).
        input_ids : int array of shape (n, T0)
        numeric_values : array of shape (n, T0), optional
        max_new_tokens : int
        mode : {"standard", "causal", "individual", "noise", "softmax"}
            ``individual`` and ``noise`` fix ``eps_seed`` / ``eps_noise`` once
            for the whole sequence (drawn with `seed` unless given); ``causal``
            draws a new individual every step; ``softmax`` samples from
            ``softmax(loc_S / temperature)`` restricted by `top_k` / `top_p`.
        seed : int or Generator, optional
        eos_id : int, optional
            Rows that emit it stop (later positions repeat it with value 0).

        Returns
        -------
        ids : int array of shape (n, T0 + max_new_tokens)
        values : array of shape (n, T0 + max_new_tokens)
        """
        if not isinstance(mode, str) or mode not in MODES:
            raise ModelError(f"mode must be one of {list(MODES)}, got {mode!r}")
        steps = check_int(max_new_tokens, "max_new_tokens", low=0)
        V = self._p["W_cls"].shape[0]
        if eos_id is not None:
            check_int(eos_id, "eos_id (a token id of the vocabulary)", low=0, high=V - 1)
        ids = np.asarray(input_ids)
        if ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer):
            raise ShapeError(f"input_ids must be an (n, T0) integer array, got {ids.dtype} {ids.shape}")
        vals = np.zeros(ids.shape) if numeric_values is None else np.asarray(numeric_values, dtype=np.float64)
        if vals.shape != ids.shape:
            raise ShapeError(f"numeric_values has shape {vals.shape}; input_ids has {ids.shape}")
        rng = as_generator(seed)
        n = ids.shape[0]
        C = self._p["W_loc"].shape[0]
        if mode == "individual" and eps_seed is None:
            eps_seed = rng.uniform(size=(n, C))
        if mode == "noise" and eps_noise is None:
            eps_noise = rng.standard_cauchy((n, C))
        done = np.zeros(n, dtype=bool)
        for _ in range(steps):
            z = np.asarray(backbone(ids, vals), dtype=np.float64)
            if z.ndim != 3 or z.shape[:2] != ids.shape:
                raise ShapeError(f"the backbone returned {z.shape}; expected ({n}, {ids.shape[1]}, H)")
            out = self.forward(z[:, -1:], mode=mode, seed=rng, eps_seed=eps_seed, eps_noise=eps_noise)
            if mode == "softmax":
                tok = sample_logits(out.loc_S[:, 0], rng, top_k, top_p, temperature)
            else:
                tok = np.argmax(out.probs[:, 0], axis=-1)
            val = np.where(tok == self.num_id, out.loc_Y[:, 0], 0.0)
            if eos_id is not None:
                tok = np.where(done, eos_id, tok)
                val = np.where(done, 0.0, val)
                done |= tok == eos_id
            ids = np.concatenate([ids, tok[:, None].astype(ids.dtype)], axis=1)
            vals = np.concatenate([vals, val[:, None]], axis=1)
        return ids, vals

    # -- as a causal model ------------------------------------------------------------------------------

    def to_model(self, T: int):
        """The head as a :class:`~causalnet.model.CausalModel` over T positions.

        Nodes (per-row shapes): ``z`` (T, H) input features; ``loc_U`` and
        ``scale_U`` (T, C) deterministic (the abduction network); ``U``
        (T, C) = ``loc_U + scale_U ⊙ eps``, the individual (exogenous Cauchy
        noise); ``noise`` (T, C) ``~ Cauchy(0, |b_noise|)``; ``U_in`` (T, C) =
        ``U + noise``; ``S`` (T, V) = ``W_cls · U_in + b_cls``; ``Y`` (T,) =
        ``W_reg · U_in + b_reg``. ``U``, ``noise`` and ``U_in`` are latent.

        The parameters are copied: later training does not change the model.

        Examples
        --------
        >>> import numpy as np
        >>> from causalnet.inference.cauchy import cauchy_marginals
        >>> head = CausalHead.initialise(vocab_size=5, hidden=4, num_id=4, seed=0)
        >>> z = np.random.default_rng(1).normal(size=(2, 3, 4))
        >>> d = cauchy_marginals(head.to_model(3), ["S"], evidence={"z": z})["S"]
        >>> bool(np.allclose(d.scale, head.forward(z).scale_S))
        True
        """
        T = int(T)
        H = self._p["W_loc"].shape[1]
        mechs = {"z": Input((T, H))}
        mechs.update(self._head_mechanisms(T, "z", ""))
        return CausalModel(mechs, latent=["U", "noise", "U_in"])

    def _head_mechanisms(self, T: int, z: str, prefix: str) -> dict:

        p = self.params
        C = p["W_loc"].shape[0]
        W_loc, b_loc, W_scale, b_scale = p["W_loc"], p["b_loc"], p["W_scale"], p["b_scale"]
        n = {k: prefix + k for k in ("loc_U", "scale_U", "U", "noise", "U_in", "S", "Y")}
        return {
            n["loc_U"]: Deterministic([z], lambda x: x @ W_loc.T + b_loc, shape=(T, C)),
            n["scale_U"]: Deterministic([z], lambda x: softplus(x @ W_scale.T + b_scale), shape=(T, C)),
            n["U"]: CauchyLinear(loc_parent=n["loc_U"], scale_parent=n["scale_U"], shape=(T, C)),
            n["noise"]: CauchyLinear(scale=np.abs(p["b_noise"]), shape=(T, C)),
            n["U_in"]: CauchyLinear([n["U"], n["noise"]], [1.0, 1.0], scale=0.0),
            n["S"]: CauchyLinear([n["U_in"]], [p["W_cls"]], loc=p["b_cls"], scale=0.0),
            n["Y"]: CauchyLinear([n["U_in"]], [p["W_reg"]], loc=p["b_reg"], scale=0.0),
        }

    def stack(self, decoder, T: int, *, prefix: str = "head.", features: str = "Y"):
        """The head on top of a transformer decoder: one CausalModel from tokens to decisions.

        Parameters
        ----------
        decoder : CausalModel
            From :func:`causalnet.models.transformer.decoder` (decoder-only).
            Its LM head (``I``, ``P``) is dropped. When its root is ``e``
            (no embedding table) and this head has ``embed``/``w_num``, ``e``
            becomes the numerical-aware embedding of two new inputs ``ids``
            (T,) and ``values`` (T,); a decoder with its own embedding keeps
            its token input ``x`` (numbers then reach it only as ``<NUM>``).
        T : int
            Positions (the Cauchy nodes have fixed shapes).
        prefix : str
            Prefix of the head's nodes (the decoder already has a ``Y``).
        features : str
            The decoder node read as ``z`` (default its output ``Y``).

        Returns
        -------
        CausalModel
            Decoder nodes, then ``{prefix}loc_U`` ... ``{prefix}S``, ``{prefix}Y``.
        """
        T = int(T)
        decoder.check_node(features, "features node")
        H = self._p["W_loc"].shape[1]
        fshape = decoder.specs[features].shape
        if len(fshape) != 2 or fshape[-1] != H:
            raise ShapeError(f"decoder node {features!r} has per-row shape {fshape}; the head expects (T, {H})")
        mechs = {k: m for k, m in decoder.mechanisms.items() if k not in ("I", "P")}
        if "e" in mechs and isinstance(mechs["e"], Input) and "embed" in self._p:
            table, w_num = self._p["embed"].copy(), self._p["w_num"].copy()
            mechs["ids"] = Input((T,), np.int64)
            mechs["values"] = Input((T,))
            mechs["e"] = Deterministic(["ids", "values"], lambda i, v: numeric_embedding(table, w_num, i, v),
                                       shape=(T, H))
        mechs.update(self._head_mechanisms(T, features, prefix))
        return CausalModel(mechs, latent=[prefix + k for k in ("U", "noise", "U_in")])

    @staticmethod
    def backbone(decoder, *, features: str = "Y", embed: Callable | None = None) -> Callable:
        """A ``backbone(ids, values) -> z`` callable for :meth:`generate` from a decoder model.

        Parameters
        ----------
        decoder : CausalModel
            A decoder-only transformer model.
        features : str
            The node read as features.
        embed : callable, optional
            ``embed(ids, values) -> e`` (e.g. ``head.embed``) for a decoder
            whose root is ``e``; a decoder with a token input ``x`` gets the ids.
        """
        def run(ids, values):
            if "e" in decoder and embed is not None:
                vals = {"e": embed(ids, values)}
            else:
                vals = {"x": np.asarray(ids)}
            return decoder.forward(vals, keep=[features])[features]
        return run

    def __repr__(self) -> str:
        d = self.dims
        return f"CausalHead(V={d['V']}, C={d['C']}, H={d['H']}, num_id={self.num_id}, alpha={self.alpha}, lam={self.lam})"


def sample_logits(logits: np.ndarray, rng: np.random.Generator, top_k: int | None, top_p: float | None,
                   temperature: float) -> np.ndarray:
    """One draw per row from ``softmax(logits / temperature)`` restricted to the top-k / top-p set."""
    from scipy.special import softmax  # loaded on first use, not by ``import causalnet``
    if not temperature > 0:
        raise ModelError(f"temperature must be > 0, got {temperature!r}")
    x = logits / temperature                                             # (n, V)
    n, V = x.shape
    order = np.argsort(-x, axis=1)                                       # (n, V)
    xs = np.take_along_axis(x, order, axis=1)
    keep = np.ones((n, V), dtype=bool)
    if top_k is not None:
        if not 1 <= int(top_k):
            raise ModelError(f"top_k must be >= 1, got {top_k!r}")
        keep[:, int(top_k):] = False
    if top_p is not None:
        if not 0 < top_p <= 1:
            raise ModelError(f"top_p must lie in (0, 1], got {top_p!r}")
        ps = softmax(xs, axis=1)
        before = np.cumsum(ps, axis=1) - ps                              # mass strictly before each token
        keep &= before < top_p
    xs = np.where(keep, xs, -np.inf)
    ps = softmax(xs, axis=1)
    u = rng.uniform(size=(n, 1))
    pick = np.minimum((np.cumsum(ps, axis=1) < u).sum(axis=1), V - 1)   # (n,)
    return order[np.arange(n), pick]


# -- gradient check ------------------------------------------------------------------------------------


def gradient_check(head: CausalHead, z, labels, targets=None, attention_mask=None, *, eps: float = 1e-6,
                   n_coords: int = 8, seed: Any = 0) -> dict:
    """Compare the analytic gradients with central finite differences.

    Parameters
    ----------
    head : CausalHead
    z, labels, targets, attention_mask : see :meth:`CausalHead.loss`
    eps : float
        Finite-difference step.
    n_coords : int
        Random coordinates checked per parameter.
    seed : int or Generator

    Returns
    -------
    dict name -> float
        Largest ``|analytic − numeric| / max(1e-8, |analytic| + |numeric|)`` per parameter.
    """
    rng = as_generator(seed)
    if head.detach_gate:   # the update direction is then not the loss gradient by design: check the exact one
        head = CausalHead(head._p, num_id=head.num_id, alpha=head.alpha, lam=head.lam)
    _, grads, _ = head.loss_and_grad(z, labels, targets, attention_mask)
    saved = head._p
    out = {}
    try:
        for k in PARAMS:
            base = saved[k]
            worst = 0.0
            for _ in range(n_coords):
                idx = tuple(int(rng.integers(s)) for s in base.shape)
                vals = []
                for sgn in (1.0, -1.0):
                    q = base.copy()
                    q[idx] += sgn * eps
                    head._p = {**saved, k: q}
                    head._abs_cache = None
                    vals.append(head.loss(z, labels, targets, attention_mask)[0])
                num = (vals[0] - vals[1]) / (2 * eps)
                ana = float(grads[k][idx])
                worst = max(worst, abs(ana - num) / max(1e-8, abs(ana) + abs(num)))
            out[k] = worst
    finally:
        head._p = saved
        head._abs_cache = None
    return out
