"""The CausalQwen head: formulas, the causal model it is, gradients, training, generation.

Oracles: the reference formulas written out in numpy, the affine-form Cauchy
engine, Monte Carlo (median and IQR), PyTorch autograd and finite differences
for the gradients.
"""

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose

from causalnet.errors import EvidenceError, ModelError, ShapeError
from causalnet.inference.cauchy import Cauchy, cauchy_marginals
from causalnet.models import causal_head as ch
from causalnet.models.causal_head import CausalHead, gradient_check, synthetic_number_task
from causalnet.models.causal_head.model import sample_logits

V, C, H, T = 7, 5, 5, 4
NUM = 6


@pytest.fixture
def head(seed):
    """A head with every parameter random (not the identity initialisation)."""
    rng = np.random.default_rng(seed)
    p = {
        "W_loc": rng.normal(size=(C, H)) * 0.7, "b_loc": rng.normal(size=C),
        "W_scale": rng.normal(size=(C, H)) * 0.3, "b_scale": rng.normal(size=C),
        "b_noise": rng.normal(size=C) * 0.5, "W_cls": rng.normal(size=(V, C)), "b_cls": rng.normal(size=V),
        "thresholds": rng.normal(size=V), "W_reg": rng.normal(size=C), "b_reg": rng.normal(),
        "embed": rng.normal(size=(V, H)), "w_num": rng.normal(size=H),
    }
    return CausalHead(p, num_id=NUM, alpha=0.2, lam=0.7)


@pytest.fixture
def batch(seed):
    rng = np.random.default_rng(seed + 1)
    n = 3
    z = rng.normal(size=(n, T, H))
    labels = rng.integers(V, size=(n, T))
    labels[:, 1] = NUM
    targets = np.where(labels == NUM, rng.normal(size=(n, T)) * 4, 0.0)
    mask = np.ones((n, T), dtype=bool)
    mask[0, -1] = False
    return z, labels, targets, mask


def reference_forward(p, z):
    """The CausalQwen formulas, written out independently."""
    loc_U = np.einsum("ch,nth->ntc", p["W_loc"], z) + p["b_loc"]
    scale_U = np.log1p(np.exp(np.einsum("ch,nth->ntc", p["W_scale"], z) + p["b_scale"]))
    s_in = scale_U + np.abs(p["b_noise"])
    loc_S = np.einsum("vc,ntc->ntv", p["W_cls"], loc_U) + p["b_cls"]
    scale_S = np.einsum("vc,ntc->ntv", np.abs(p["W_cls"]), s_in)
    loc_Y = np.einsum("c,ntc->nt", p["W_reg"], loc_U) + p["b_reg"]
    scale_Y = np.einsum("c,ntc->nt", np.abs(p["W_reg"]), s_in)
    P = 0.5 + np.arctan((loc_S - p["thresholds"]) / scale_S) / np.pi
    return loc_U, scale_U, loc_S, scale_S, loc_Y, scale_Y, P


def torch_loss(p, z, labels, targets, mask, num_id, alpha, lam, detach_gate=False):
    """The total loss in PyTorch (autograd is the gradient oracle)."""
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in p.items()
         if k not in ("embed", "w_num")}
    z = torch.tensor(z)
    loc_U = z @ t["W_loc"].T + t["b_loc"]
    s_in = torch.nn.functional.softplus(z @ t["W_scale"].T + t["b_scale"]) + t["b_noise"].abs()
    loc_S = loc_U @ t["W_cls"].T + t["b_cls"]
    scale_S = s_in @ t["W_cls"].abs().T
    P = 0.5 + torch.atan((loc_S - t["thresholds"]) / scale_S) / torch.pi
    y = torch.nn.functional.one_hot(torch.tensor(labels), P.shape[-1]).double()
    bce = -(y * torch.log(P) + (1 - y) * torch.log(1 - P)).sum(-1)
    m = torch.tensor(mask, dtype=torch.float64)
    num = m * torch.tensor(labels == num_id, dtype=torch.float64)
    loc_Y = loc_U @ t["W_reg"] + t["b_reg"]
    scale_Y = s_in @ t["W_reg"].abs()
    r = (torch.tensor(targets) - loc_Y) / scale_Y
    nll = torch.log(torch.pi * scale_Y) + torch.log1p(r * r)
    pn = P[..., num_id].detach() if detach_gate else P[..., num_id]
    gate = num * (alpha + (1 - alpha) * pn)
    total = (bce * m).sum() / m.sum() + lam * (gate * nll).sum() / num.sum()
    total.backward()
    return total.item(), {k: v.grad.numpy() for k, v in t.items()}


# -- formulas ---------------------------------------------------------------------------------


def test_numeric_embedding(head):
    ids = np.array([[1, NUM, 2]])
    vals = np.array([[0.0, 99.9, 0.0]])
    e = head.embed(ids, vals)
    p = head.params
    assert_allclose(e[0, 0], p["embed"][1], rtol=0, atol=0)                  # φ(0) = 0
    assert_allclose(e[0, 1], p["embed"][NUM] + np.log(100.9) * p["w_num"], rtol=1e-13, atol=1e-13)
    neg = head.embed(ids, -vals)
    assert_allclose(neg[0, 1], p["embed"][NUM] - np.log(100.9) * p["w_num"], rtol=1e-13, atol=1e-13)


def test_standard_forward_matches_the_formulas(head, batch):
    z = batch[0]
    out = head.forward(z)
    ref = reference_forward(head.params, z)
    for got, want in zip((out.loc_U, out.scale_U, out.loc_S, out.scale_S, out.loc_Y, out.scale_Y, out.probs), ref):
        assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    tok, val = out.predict()
    assert_allclose(tok, ref[-1].argmax(-1), rtol=0, atol=0)
    assert_allclose(val, ref[4], rtol=0, atol=1e-12)


def test_identity_initialisation(seed):
    lm = np.random.default_rng(seed).normal(size=(V, H))
    h = CausalHead.initialise(V, H, num_id=NUM, lm_head=lm, scale_init=1.0, seed=seed)
    z = np.random.default_rng(seed + 2).normal(size=(2, T, H))
    out = h.forward(z)
    assert_allclose(out.loc_U, z, rtol=0, atol=0)
    assert_allclose(out.scale_U, np.log1p(np.e), rtol=1e-14, atol=0)
    assert_allclose(out.loc_S, z @ lm.T, rtol=1e-13, atol=1e-13)               # = the base LM's logits
    soft = h.forward(z, mode="softmax").probs
    assert_allclose(soft, np.exp(z @ lm.T) / np.exp(z @ lm.T).sum(-1, keepdims=True), rtol=1e-12, atol=1e-15)


def test_head_formulas_equal_the_affine_engine(head, batch):
    """The CausalQwen independent-component formula is the engine's answer on the head's DAG."""
    z = batch[0]
    m = head.to_model(T)
    d = cauchy_marginals(m, ["S", "Y", "U_in", "U"], evidence={"z": z})
    out = head.forward(z)
    assert_allclose(d["S"].loc, out.loc_S, rtol=1e-12, atol=1e-12)
    assert_allclose(d["S"].scale, out.scale_S, rtol=1e-12, atol=1e-12)
    assert_allclose(d["Y"].loc, out.loc_Y, rtol=1e-12, atol=1e-12)
    assert_allclose(d["Y"].scale, out.scale_Y, rtol=1e-12, atol=1e-12)
    assert_allclose(d["U"].scale, out.scale_U, rtol=1e-12, atol=0)
    assert_allclose(d["U_in"].scale, out.scale_U + np.abs(head.params["b_noise"]), rtol=1e-12, atol=0)
    q = m.query("S", evidence={"z": z})                                        # through the dispatcher
    assert isinstance(q, Cauchy) and q.method == "cauchy-affine (exact)"
    assert_allclose(q.prob_greater(head.params["thresholds"]), out.probs, rtol=1e-12, atol=1e-14)


def test_head_model_against_monte_carlo(head, seed):
    z = np.random.default_rng(seed).normal(size=(1, H))                          # one position, 10^6 draws
    tr = head.to_model(1).forward({"z": z}, n=1_000_000, seed=seed, keep=["S", "Y"])
    out = head.forward(z[None])
    for x, loc, scale in ((tr["S"], out.loc_S[0], out.scale_S[0]), (tr["Y"], out.loc_Y[0], out.scale_Y[0])):
        q1, med, q3 = np.percentile(x, [25, 50, 75], axis=0)
        assert np.max(np.abs(med - loc) / scale) < 0.01
        assert np.max(np.abs((q3 - q1) / 2 - scale) / scale) < 0.017


# -- inference modes as causal queries --------------------------------------------------------------


def test_causal_mode_is_do_U(head, batch, seed):
    z = batch[0]
    out = head.forward(z, mode="causal", seed=seed)
    u = out.u
    assert u.shape == (3, T, C)
    d = cauchy_marginals(head.to_model(T), ["S", "Y"], evidence={"z": z}, do={"U": u})
    assert_allclose(d["S"].loc, out.loc_S, rtol=1e-12, atol=1e-12)
    assert_allclose(d["S"].scale, out.scale_S, rtol=1e-12, atol=1e-12)
    assert_allclose(d["Y"].scale, out.scale_Y, rtol=1e-12, atol=1e-12)
    again = head.forward(z, mode="causal", u=u)
    assert_allclose(again.loc_S, out.loc_S, rtol=0, atol=0)


def test_fixed_individual_is_same_noise_other_context(head, batch, seed):
    """Individual mode = the SCM run with the same exogenous eps_U on a new context z'."""
    z, z2 = batch[0], batch[0][::-1] * 0.5
    eps_seed = np.random.default_rng(seed).uniform(size=C)
    eps_U = np.broadcast_to(np.tan(np.pi * (eps_seed - 0.5)), (3, T, C))
    m = head.to_model(T)
    for ctx in (z, z2):
        out = head.forward(ctx, mode="individual", eps_seed=eps_seed)
        u_scm = m.forward({"z": ctx}, noise={"U": eps_U}, keep=["U"])["U"]
        assert_allclose(out.u, u_scm, rtol=1e-12, atol=1e-12)
        d = cauchy_marginals(m, ["S"], evidence={"z": ctx}, do={"U": u_scm})["S"]
        assert_allclose(out.loc_S, d.loc, rtol=1e-12, atol=1e-12)
        assert_allclose(out.scale_S, d.scale, rtol=1e-12, atol=1e-12)


def test_fixed_noise_mode(head, batch, seed):
    z = batch[0]
    e = np.random.default_rng(seed).standard_cauchy(C)
    out = head.forward(z, mode="noise", eps_noise=e)
    p = head.params
    loc_in = out.loc_U + np.abs(p["b_noise"]) * e
    assert_allclose(out.loc_S, loc_in @ p["W_cls"].T + p["b_cls"], rtol=1e-12, atol=1e-12)
    assert_allclose(out.scale_S, out.scale_U @ np.abs(p["W_cls"]).T, rtol=1e-12, atol=1e-12)
    # the SCM: the noise node fixed to |b_noise| ⊙ e, U left random
    d = cauchy_marginals(head.to_model(T), ["S"], evidence={"z": z},
                         do={"noise": np.abs(p["b_noise"]) * e * np.ones((T, 1))})["S"]
    assert_allclose(d.loc, out.loc_S, rtol=1e-12, atol=1e-12)
    assert_allclose(d.scale, out.scale_S, rtol=1e-12, atol=1e-12)


def test_modes_reject_bad_input(head, batch):
    z = batch[0]
    with pytest.raises(ModelError, match="mode must be one of"):
        head.forward(z, mode="greedy")
    with pytest.raises(ModelError, match="strictly between 0 and 1"):
        head.forward(z, mode="individual", eps_seed=np.ones(C))
    with pytest.raises(ShapeError, match="eps_noise must have shape"):
        head.forward(z, mode="noise", eps_noise=np.ones(C + 1))
    with pytest.raises(ShapeError, match="features z of shape"):
        head.forward(np.ones((2, T, H + 1)))


# -- loss and gradients ----------------------------------------------------------------------------------


def test_loss_and_gradients_match_torch(head, batch):
    total, grads, parts = head.loss_and_grad(*batch)
    ref_total, ref_grads = torch_loss(head.params, *batch, NUM, head.alpha, head.lam)
    assert_allclose(total, ref_total, rtol=1e-12, atol=1e-12)
    for k, g in ref_grads.items():
        assert_allclose(grads[k], g, rtol=1e-8, atol=1e-10, err_msg=k)
    assert parts["n_num"] == int((batch[1] == NUM)[batch[3]].sum())


def test_detached_gate_gradients_match_torch(head, batch):
    h = CausalHead(head.params, num_id=NUM, alpha=0.0, lam=1.3, detach_gate=True)
    total, grads, _ = h.loss_and_grad(*batch)
    ref_total, ref_grads = torch_loss(head.params, *batch, NUM, 0.0, 1.3, detach_gate=True)
    assert_allclose(total, ref_total, rtol=1e-12, atol=1e-12)
    for k, g in ref_grads.items():
        assert_allclose(grads[k], g, rtol=1e-8, atol=1e-10, err_msg=k)


def test_gradients_match_finite_differences(head, batch):
    worst = gradient_check(head, *batch, eps=1e-6, n_coords=6, seed=0)
    assert set(worst) == set(ch.PARAMS)
    assert max(worst.values()) < 1e-6, worst


def test_ungated_loss_and_masks(head, batch):
    z, labels, targets, mask = batch
    h1 = CausalHead(head.params, num_id=NUM, alpha=1.0, lam=1.0)
    total, parts = h1.loss(z, labels, targets, mask)
    _, _, _, _, loc_Y, scale_Y, P = reference_forward(head.params, z)
    y = np.eye(V)[labels]
    bce = -(y * np.log(P) + (1 - y) * np.log(1 - P)).sum(-1)
    num = mask & (labels == NUM)
    nll = np.log(np.pi * scale_Y) + np.log1p(((targets - loc_Y) / scale_Y) ** 2)
    assert_allclose(parts["cls"], bce[mask].mean(), rtol=1e-12, atol=0)
    assert_allclose(parts["reg"], nll[num].mean(), rtol=1e-12, atol=0)
    assert_allclose(total, bce[mask].mean() + nll[num].mean(), rtol=1e-12, atol=0)
    # labels under the mask do not matter
    lab2 = labels.copy()
    lab2[~mask] = 0
    assert_allclose(h1.loss(z, lab2, targets, mask)[0], total, rtol=0, atol=0)


@pytest.mark.parametrize("change, err, match", [
    (dict(thresholds=np.zeros(V + 1)), ShapeError, r"thresholds has shape \(8,\), expected \(7,\)"),
    (dict(W_cls=np.full((V, C), np.nan)), ModelError, "W_cls' contains NaN"),
    (dict(W_reg=np.zeros((C, 1))), ShapeError, "W_reg has shape"),
    (dict(b_reg=np.zeros(2)), ShapeError, "b_reg has shape"),
])
def test_bad_parameters_are_typed_errors(head, change, err, match):
    with pytest.raises(err, match=match):
        CausalHead({**head.params, **change}, num_id=NUM)


def test_bad_constructor_and_batch_input(head, batch):
    with pytest.raises(ModelError, match="num_id must be a token id"):
        CausalHead(head.params, num_id=V)
    with pytest.raises(ModelError, match="alpha must lie in"):
        CausalHead(head.params, num_id=NUM, alpha=1.5)
    with pytest.raises(ModelError, match="missing parameters"):
        CausalHead({k: v for k, v in head.params.items() if k != "b_noise"}, num_id=NUM)
    z, labels, targets, mask = batch
    with pytest.raises(ShapeError, match="labels must be integer ids"):
        head.loss(z, labels[:, :-1], targets, mask)
    with pytest.raises(EvidenceError, match="labels must be token ids"):
        head.loss(z, labels + V, targets, mask)
    with pytest.raises(ShapeError, match="attention_mask must have shape"):
        head.loss(z, labels, targets, mask[:, :-1])


# -- training on the synthetic task ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained():
    """A head trained on the synthetic task (α = 0, gate as a weight), its task, a test set and the
    metrics before training."""
    task = synthetic_number_task(64, 16, seed=3)
    test = task.resample(96, seed=4)
    head = CausalHead.initialise(len(task.vocab), task.hidden, num_id=task.num_id, alpha=0.0, detach_gate=True,
                                 seed=0)
    before = head.evaluate(test.z(), test.labels, test.targets, test.attention_mask)
    seen = []
    head.fit(task.z(), task.labels, task.targets, task.attention_mask, steps=500, lr=0.1, seed=0,
             callback=lambda step, loss, parts: seen.append(loss))
    return task, test, head, before, seen


def test_training_learns_the_synthetic_task(trained):
    task, test, head, before, seen = trained
    assert len(seen) == 500 and seen[-1] < 0.5 * seen[0]
    after = head.evaluate(test.z(), test.labels, test.targets, test.attention_mask)
    oracle = test.oracle_accuracy()
    assert before["accuracy"] < 0.5 * oracle
    assert after["accuracy"] > oracle - 0.05
    assert after["num_precision"] > 0.95 and after["num_recall"] > 0.95
    assert after["reg_mdae"] < 0.6 and after["reg_mae"] < 1.0       # values range over ~0.5 .. 20
    assert after["reg_mdae"] < 0.2 * before["reg_mdae"]


def test_fit_callback_can_stop_and_minibatches(head, batch):
    h = CausalHead(head.params, num_id=NUM)
    h.fit(*batch, steps=50, lr=0.01, batch_size=2, seed=0, callback=lambda s, loss, parts: s < 4)
    assert len(h.history_["loss"]) == 5
    with pytest.raises(ModelError, match="unknown trainable"):
        h.fit(*batch, steps=1, trainable=["W_nope"])


# -- generation -----------------------------------------------------------------------------------------------


def test_generation_emits_numbers_through_the_regression_channel(trained, seed):
    task, _, head, _, _ = trained
    prompt = np.array([[task.bos_id, 6, 4], [task.bos_id, 7, 5]])            # "item0 costs", "item1 weighs"
    ids, vals = head.generate(task.features, prompt, max_new_tokens=5)
    assert ids.shape == (2, 8) and vals.shape == (2, 8)
    assert np.all(ids[:, 3] == task.num_id) and np.all(ids[:, 4] == task.sep_id)
    assert_allclose(vals[:, 3], [task.values[0, 0], task.values[1, 1]], rtol=0, atol=0.6)
    assert np.all(vals[ids != task.num_id] == 0.0)
    # a fixed individual gives the same sequence for the same eps_seed
    e = np.random.default_rng(seed).uniform(size=(2, head.dims["C"]))
    a = head.generate(task.features, prompt, max_new_tokens=4, mode="individual", eps_seed=e)
    b = head.generate(task.features, prompt, max_new_tokens=4, mode="individual", eps_seed=e)
    assert_allclose(a[1], b[1], rtol=0, atol=0)
    # softmax with top_k=1 is greedy on loc_S
    g = head.generate(task.features, prompt, max_new_tokens=3, mode="softmax", top_k=1, seed=seed)[0]
    z = task.features(prompt, np.zeros(prompt.shape))
    assert np.all(g[:, 3] == head.forward(z[:, -1:]).loc_S[:, 0].argmax(-1))
    with pytest.raises(ModelError, match="top_p must lie"):
        head.generate(task.features, prompt, max_new_tokens=1, mode="softmax", top_p=0.0)


def test_generation_stops_at_eos(head, seed):
    rng = np.random.default_rng(seed)
    backbone = lambda ids, vals: np.tanh(head.embed(ids, vals))          # noqa: E731
    ids, _ = head.generate(backbone, rng.integers(V, size=(4, 2)), max_new_tokens=6, eos_id=0, mode="causal",
                           seed=seed)
    for row in ids[:, 2:]:
        hit = np.flatnonzero(row == 0)
        if hit.size:
            assert np.all(row[hit[0]:] == 0)


def test_top_p_sampling_keeps_the_nucleus(seed):
    logits = np.log(np.array([[0.5, 0.3, 0.15, 0.05]] * 4000))
    draws = sample_logits(logits, np.random.default_rng(seed), None, 0.75, 1.0)
    assert set(np.unique(draws)) == {0, 1}
    assert abs((draws == 0).mean() - 0.5 / 0.8) < 0.03


# -- on a transformer decoder ----------------------------------------------------------------------------------


def test_stacked_on_a_decoder(seed):
    from causalnet.models import transformer as tf

    dec = tf.decoder(layers=1, d_model=H, heads=1, d_ff=8, seed=seed)
    head = CausalHead.initialise(V, H, num_id=NUM, seed=seed)
    m = head.stack(dec, T)
    rng = np.random.default_rng(seed)
    ids = rng.integers(V, size=(3, T))
    vals = np.where(ids == NUM, rng.uniform(1, 50, size=(3, T)), 0.0)
    d = cauchy_marginals(m, ["head.S", "head.Y"], evidence={"ids": ids, "values": vals})
    z = CausalHead.backbone(dec, embed=head.embed)(ids, vals)
    out = head.forward(z)
    assert_allclose(d["head.S"].loc, out.loc_S, rtol=1e-12, atol=1e-12)
    assert_allclose(d["head.S"].scale, out.scale_S, rtol=1e-12, atol=1e-12)
    assert_allclose(d["head.Y"].scale, out.scale_Y, rtol=1e-12, atol=1e-12)
    assert "I" not in m and m.dag.parents("head.loc_U") == ("Y",)
