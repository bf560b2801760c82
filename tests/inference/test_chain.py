"""Chain engine: brute-force enumeration, log-space engine, invariants, stability, errors."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import logsumexp

from causalnet.errors import EvidenceError, ModelError, ShapeError
from causalnet.inference import chain
from causalnet.inference.chain import (
    backward_messages,
    compiled,
    forward_backward,
    forward_messages,
    log_partition,
    sample_paths,
    viterbi,
)

# ---------------------------------------------------------------------------
# backends: the compiled (numba) sweeps and the numpy ones must agree
# ---------------------------------------------------------------------------

BACKENDS = ["numba", "numpy"] if compiled.AVAILABLE else ["numpy"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Run the test once per chain backend."""
    with compiled.backend(request.param):
        yield request.param


@pytest.fixture
def numpy_sweeps():
    """Tests of the numpy-only paths (time chunks, fused max-plus) run with the numpy backend."""
    with compiled.backend("numpy"):
        yield


# ---------------------------------------------------------------------------
# brute force
# ---------------------------------------------------------------------------


def _brute(u, P, L):
    """Enumerate every path of one row: log Z, marginals, edge marginals, best path, path probs."""
    K = u.shape[-1]
    paths = list(itertools.product(range(K), repeat=L))
    scores = np.empty(len(paths))
    for i, y in enumerate(paths):
        s = sum(u[t, y[t]] for t in range(L))
        s += sum((P if P.ndim == 2 else P[t])[y[t], y[t + 1]] for t in range(L - 1))
        scores[i] = s
    log_z = logsumexp(scores)
    with np.errstate(invalid="ignore"):
        prob = np.exp(scores - log_z)
    marg = np.zeros((L, K))
    edge = np.zeros((max(L - 1, 0), K, K))
    for y, p in zip(paths, prob):
        for t in range(L):
            marg[t, y[t]] += p
        for t in range(L - 1):
            edge[t, y[t], y[t + 1]] += p
    best = int(np.argmax(scores))
    return log_z, marg, edge, paths[best], scores[best], dict(zip(paths, prob))


def _random_chain(rng, n, T, K, shared, ragged, neg_inf=0.0, scale=2.0):
    unary = rng.normal(size=(n, T, K)) * scale
    if neg_inf:
        unary[rng.random(unary.shape) < neg_inf] = -np.inf
    pairwise = rng.normal(size=(K, K) if shared else (n, max(T - 1, 0), K, K)) * scale
    lengths = rng.integers(1, T + 1, size=n) if ragged else np.full(n, T)
    mask = np.arange(T)[None, :] < lengths[:, None]
    return unary, pairwise, mask, lengths


def _row_pairwise(pairwise, r):
    return pairwise if pairwise.ndim == 2 else pairwise[r]


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("ragged", [False, True])
@pytest.mark.parametrize("trial", range(4))
def test_matches_brute_force(backend, rng, shared, ragged, trial):
    n, T, K = 4, int(rng.integers(1, 6)), int(rng.integers(1, 4))
    unary, pairwise, mask, lengths = _random_chain(rng, n, T, K, shared, ragged)
    post = forward_backward(unary, pairwise, mask, edges=True)
    lz = log_partition(unary, pairwise, mask)
    paths, scores = viterbi(unary, pairwise, mask)
    la = forward_messages(unary, pairwise, mask)
    lb = backward_messages(unary, pairwise, mask)
    for r in range(n):
        L = lengths[r]
        log_z, marg, edge, best, best_score, _ = _brute(unary[r], _row_pairwise(pairwise, r), L)
        assert_allclose(post.log_z[r], log_z, rtol=1e-12, atol=0)
        assert_allclose(lz[r], log_z, rtol=1e-12, atol=0)
        assert_allclose(post.marginals[r, :L], marg, rtol=0, atol=1e-12)
        assert_array_equal(post.marginals[r, L:], 0.0)
        assert_allclose(post.edge_marginals[r, : L - 1], edge, rtol=0, atol=1e-12)
        assert_array_equal(post.edge_marginals[r, L - 1 :], 0.0)
        assert tuple(paths[r, :L]) == best
        assert_array_equal(paths[r, L:], -1)
        assert_allclose(scores[r], best_score, rtol=1e-12, atol=0)
        # messages: alpha + beta = log marginal + log Z at every real step
        assert_allclose(logsumexp(la[r, :L] + lb[r, :L], axis=1), log_z, rtol=1e-12, atol=0)
        assert_allclose(logsumexp(la[r, L - 1]), log_z, rtol=1e-12, atol=0)
        assert_array_equal(lb[r, L - 1], 0.0)
        assert np.isneginf(la[r, L:]).all() and np.isneginf(lb[r, L:]).all()
    assert_allclose(post.edge_counts, post.edge_marginals.sum(axis=(0, 1)), rtol=0, atol=1e-12)
    counts_only = forward_backward(unary, pairwise, mask, counts=True)
    assert counts_only.edge_marginals is None
    assert_allclose(counts_only.edge_counts, post.edge_counts, rtol=0, atol=1e-12)


@pytest.mark.parametrize("shared, zero_pairs", [(True, False), (True, True), (False, True)])
def test_structural_zeros_match_brute_force(backend, rng, shared, zero_pairs):
    # -inf unaries (and pairwise entries): the Viterbi sweeps take their -inf-safe paths
    for _ in range(6):
        unary, pairwise, mask, lengths = _random_chain(rng, 3, 5, 3, shared, True, neg_inf=0.25)
        if zero_pairs:
            pairwise[rng.random(pairwise.shape) < 0.3] = -np.inf
        lz = log_partition(unary, pairwise, mask)
        ref = [_brute(unary[r], _row_pairwise(pairwise, r), lengths[r]) for r in range(3)]
        assert_allclose(lz, [b[0] for b in ref], rtol=1e-12)
        if np.isfinite(lz).all():
            post = forward_backward(unary, pairwise, mask)
            paths, scores = viterbi(unary, pairwise, mask)
            for r in range(3):
                L = lengths[r]
                assert_allclose(post.marginals[r, :L], ref[r][1], rtol=0, atol=1e-12)
                assert tuple(paths[r, :L]) == ref[r][3]
                assert_allclose(scores[r], ref[r][4], rtol=1e-12)


def test_extreme_potentials_match_brute_force(backend, rng):
    # potentials near 0 (log 1e-300 ~ -690): products underflow the scaled sweep,
    # rows fall back to log space; the answer must still be exact
    for shared in (True, False):
        for _ in range(8):
            n, T, K = 3, 5, 3
            unary = rng.choice([0.0, -690.0, -1400.0, -np.inf], size=(n, T, K), p=[0.4, 0.3, 0.2, 0.1])
            pairwise = rng.choice([0.0, -690.0, -745.0], size=(K, K) if shared else (n, T - 1, K, K))
            lengths = rng.integers(1, T + 1, size=n)
            mask = np.arange(T)[None, :] < lengths[:, None]
            lz = log_partition(unary, pairwise, mask)
            ref = [_brute(unary[r], _row_pairwise(pairwise, r), lengths[r]) for r in range(n)]
            assert_allclose(lz, [b[0] for b in ref], rtol=1e-12, atol=1e-12)
            if not np.isfinite(lz).all():
                with pytest.raises(EvidenceError, match="probability zero"):
                    forward_backward(unary, pairwise, mask)
                continue
            post = forward_backward(unary, pairwise, mask, edges=True)
            for r in range(n):
                L = lengths[r]
                assert_allclose(post.marginals[r, :L], ref[r][1], rtol=0, atol=1e-12)
                assert_allclose(post.edge_marginals[r, : L - 1], ref[r][2], rtol=0, atol=1e-12)


def test_scaled_engine_equals_log_engine(backend, rng):
    # the fast (scaled, probability-space) engine against the log-space engine
    for shared in (True, False):
        unary, pairwise, mask, _ = _random_chain(rng, 7, 30, 4, shared, True, scale=3.0)
        ch = chain.Chain.from_batch(unary, pairwise, mask)
        g1, z1, x1, e1 = chain.chain_posterior(ch, edges=True)
        g2, z2, x2, e2 = chain.log_space_posterior(ch, True, True)
        assert_allclose(z1, z2, rtol=1e-12, atol=0)
        assert_allclose(g1, g2, rtol=0, atol=1e-11)
        assert_allclose(x1, x2, rtol=0, atol=1e-11)
        assert_allclose(e1, e2, rtol=1e-10, atol=0)


def test_sample_frequencies_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    unary, pairwise, _, _ = _random_chain(rng, 2, 3, 2, True, False, scale=1.0)
    size = 20000
    z = sample_paths(unary, pairwise, size=size, seed=seed)
    assert z.shape == (size, 2, 3)
    for r in range(2):
        probs = _brute(unary[r], pairwise, 3)[5]
        for path, p in probs.items():
            freq = np.mean((z[:, r] == path).all(axis=1))
            assert abs(freq - p) < 5 * np.sqrt(p * (1 - p) / size) + 1e-3


def test_sample_paths_ragged_perstep_and_seeded(seed):
    rng = np.random.default_rng(seed)
    unary, pairwise, mask, lengths = _random_chain(rng, 3, 4, 3, False, True, neg_inf=0.2, scale=1.0)
    pairwise[..., 0, 1] = -np.inf  # transition 0 -> 1 never happens
    if not np.isfinite(log_partition(unary, pairwise, mask)).all():
        unary = np.where(np.isneginf(unary), -5.0, unary)
    z1 = sample_paths(unary, pairwise, mask, size=4000, seed=seed)
    z2 = sample_paths(unary, pairwise, mask, size=4000, seed=np.random.default_rng(seed))
    assert_array_equal(z1, z2)
    assert sample_paths(unary, pairwise, mask, seed=seed).shape == (3, 4)
    post = forward_backward(unary, pairwise, mask)
    for r in range(3):
        L = lengths[r]
        assert (z1[:, r, L:] == -1).all() and (z1[:, r, :L] >= 0).all()
        assert not ((z1[:, r, :-1] == 0) & (z1[:, r, 1:] == 1)).any()
        assert np.isfinite(unary[r, np.arange(L), z1[:, r, :L]]).all()  # never an impossible state
        freq = np.stack([(z1[:, r, :L] == k).mean(axis=0) for k in range(3)], axis=1)
        assert_allclose(freq, post.marginals[r, :L], rtol=0, atol=0.04)


# ---------------------------------------------------------------------------
# invariants (hypothesis)
# ---------------------------------------------------------------------------


@st.composite
def _chains(draw):
    n = draw(st.integers(1, 4))
    T = draw(st.integers(1, 7))
    K = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scale = draw(st.sampled_from([0.1, 1.0, 5.0, 50.0]))
    return _random_chain(rng, n, T, K, draw(st.booleans()), draw(st.booleans()), scale=scale)


@settings(max_examples=60, deadline=None)
@given(_chains())
def test_marginals_sum_to_one(ch):
    unary, pairwise, mask, lengths = ch
    post = forward_backward(unary, pairwise, mask, edges=True)
    s = post.marginals.sum(axis=-1)
    assert_allclose(s[mask], 1.0, rtol=0, atol=1e-12)
    assert_array_equal(s[~mask], 0.0)
    es = post.edge_marginals.sum(axis=(-2, -1))
    assert_allclose(es[mask[:, 1:]], 1.0, rtol=0, atol=1e-12)
    # edge marginals marginalise to node marginals
    assert_allclose(post.edge_marginals.sum(-1)[mask[:, 1:]], post.marginals[:, :-1][mask[:, 1:]], atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(_chains())
def test_per_step_pairwise_equal_to_shared(ch):
    unary, pairwise, mask, _ = ch
    n, T, K = unary.shape
    shared = pairwise if pairwise.ndim == 2 else pairwise[0, 0] if T > 1 else np.zeros((K, K))
    tiled = np.broadcast_to(shared, (n, max(T - 1, 0), K, K))
    a = forward_backward(unary, shared, mask, edges=True)
    b = forward_backward(unary, tiled, mask, edges=True)
    assert_allclose(a.log_z, b.log_z, rtol=1e-12, atol=1e-12)
    assert_allclose(a.marginals, b.marginals, rtol=0, atol=1e-12)
    assert_allclose(a.edge_marginals, b.edge_marginals, rtol=0, atol=1e-12)
    pa, sa = viterbi(unary, shared, mask)
    pb, sb = viterbi(unary, tiled, mask)
    assert_array_equal(pa, pb)
    assert_allclose(sa, sb, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(_chains())
def test_ragged_rows_equal_rows_alone(ch):
    unary, pairwise, mask, lengths = ch
    post = forward_backward(unary, pairwise, mask, edges=True)
    paths, scores = viterbi(unary, pairwise, mask)
    for r in range(unary.shape[0]):
        L = lengths[r]
        pr = pairwise if pairwise.ndim == 2 else pairwise[r : r + 1, : L - 1]
        alone = forward_backward(unary[r : r + 1, :L], pr, edges=True)
        assert_allclose(post.log_z[r], alone.log_z[0], rtol=1e-12, atol=1e-12)
        assert_allclose(post.marginals[r, :L], alone.marginals[0], rtol=0, atol=1e-12)
        assert_allclose(post.edge_marginals[r, : L - 1], alone.edge_marginals[0], rtol=0, atol=1e-12)
        p1, s1 = viterbi(unary[r : r + 1, :L], pr)
        assert_array_equal(paths[r, :L], p1[0])
        assert_allclose(scores[r], s1[0], rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# numerical stability on long chains with tiny potentials
# ---------------------------------------------------------------------------


def _tiny_chain(rng, n, T, K):
    # probabilities 1e-300 or 1 (log ~ -690.8 or 0); every state is reachable
    unary = np.log(np.where(rng.random((n, T, K)) < 0.5, 1e-300, 1.0))
    pairwise = np.log(np.where(rng.random((K, K)) < 0.5, 1e-300, 1.0) + np.eye(K))
    return unary, pairwise


def _check_stable(unary, pairwise):
    ch = chain.Chain.from_batch(unary, pairwise, None)
    ref = chain.log_forward(ch)[1].sum(axis=0)  # pure log-space reference
    assert np.isfinite(ref).all()
    lz = log_partition(unary, pairwise)
    assert_allclose(lz, ref, rtol=1e-12, atol=0)
    post = forward_backward(unary, pairwise, counts=True)
    assert np.isfinite(post.marginals).all() and np.isfinite(post.edge_counts).all()
    assert_allclose(post.log_z, ref, rtol=1e-12, atol=0)
    assert_allclose(post.marginals.sum(-1), 1.0, rtol=0, atol=1e-12)
    assert_allclose(post.edge_counts.sum(), unary.shape[0] * (unary.shape[1] - 1), rtol=1e-9)
    paths, scores = viterbi(unary, pairwise)
    assert np.isfinite(scores).all() and (paths >= 0).all()
    # the path's own score, recomputed
    r = np.arange(unary.shape[0])[:, None]
    own = unary[r, np.arange(unary.shape[1]), paths].sum(1) + pairwise[paths[:, :-1], paths[:, 1:]].sum(1)
    assert_allclose(scores, own, rtol=1e-12, atol=0)
    assert (scores <= lz + 1e-9 * np.abs(lz)).all()


def test_tiny_potentials_stable(backend, rng):
    unary, pairwise = _tiny_chain(rng, 3, 2000, 4)
    _check_stable(unary, pairwise)


@pytest.mark.slow
def test_tiny_potentials_stable_T_1e5(backend, rng):
    unary, pairwise = _tiny_chain(rng, 1, 100_000, 4)
    _check_stable(unary, pairwise)


def test_long_chain_scaled_matches_log(backend, rng):
    # ordinary potentials over many steps: the scaled sweep alone must be exact
    T, K = 5000, 5
    unary = np.log(rng.dirichlet(np.ones(K), size=(2, T)))
    pairwise = np.log(rng.dirichlet(np.ones(K), size=K))
    ch = chain.Chain.from_batch(unary, pairwise, None)
    _, c, bad = chain.scaled_forward(ch)
    assert not bad.any()
    ref = chain.log_forward(ch)[1].sum(axis=0)
    assert_allclose(chain.scaled_log_partition(ch, c), ref, rtol=1e-12, atol=0)


def _sequential(unary, pairwise, mask, **kw):
    ch = chain.Chain.from_batch(unary, pairwise, mask)
    ch.allow_time_chunks = False
    return chain.chain_posterior(ch, **kw), ch


@pytest.mark.parametrize("n, T, K", [(1, 3000, 4), (3, 2500, 3), (2, 1500, 8)])
def test_time_chunked_sweep_equals_sequential(numpy_sweeps, rng, n, T, K):
    # long, narrow batches are swept in time chunks; same answers as step by step
    unary = np.log(rng.dirichlet(np.ones(K), size=(n, T)))
    pairwise = np.log(rng.dirichlet(np.ones(K), size=K))
    pairwise[0, 1] = -np.inf  # a structural zero
    lengths = rng.integers(T // 2, T + 1, size=n)
    lengths[0] = T
    mask = np.arange(T)[None, :] < lengths[:, None]
    ch = chain.Chain.from_batch(unary, pairwise, mask)
    assert chain.use_time_chunks(ch)
    g1, z1, _, e1 = chain.chain_posterior(ch, counts=True)
    assert ch.time_chunks is not None
    (g2, z2, _, e2), ch2 = _sequential(unary, pairwise, mask, counts=True)
    assert ch2.time_chunks is None
    assert_allclose(z1, z2, rtol=1e-13, atol=0)
    assert_allclose(g1, g2, rtol=0, atol=1e-12)
    assert_allclose(e1, e2, rtol=1e-11, atol=0)
    assert_allclose(log_partition(unary, pairwise, mask), chain.Chain.from_batch(unary, pairwise, mask).rows_to_batch(z2))
    # messages too
    la, lb = chain.chain_log_messages(chain.Chain.from_batch(unary, pairwise, mask))
    post = forward_backward(unary, pairwise, mask)
    r = 1 if n > 1 else 0
    L = lengths[r]
    lam = forward_messages(unary, pairwise, mask)[r, :L]
    lbm = backward_messages(unary, pairwise, mask)[r, :L]
    assert_allclose(np.exp(lam + lbm - post.log_z[r]), post.marginals[r, :L], rtol=0, atol=1e-9)


@pytest.mark.parametrize("n, T, K, zero", [(1, 3000, 4, True), (3, 2500, 3, True), (1, 1500, 8, True), (2, 1500, 12, False)])
def test_time_chunked_viterbi_equals_sequential(numpy_sweeps, rng, n, T, K, zero):
    # with a structural zero the chunks' transfer matrices take the broadcast
    # max-plus step; with finite potentials the fused (Chebyshev) one
    unary = np.log(rng.dirichlet(np.ones(K), size=(n, T)))
    pairwise = np.log(rng.dirichlet(np.ones(K), size=K))
    if zero:
        pairwise[1, 0] = -np.inf
    lengths = rng.integers(T // 2, T + 1, size=n)
    lengths[0] = T
    mask = np.arange(T)[None, :] < lengths[:, None]
    ch = chain.Chain.from_batch(unary, pairwise, mask)
    assert chain.use_time_chunks(ch, chain.TC_MAX_NK3_VITERBI if zero else chain.TC_MAX_NK3)
    z1, s1 = chain.chain_viterbi(ch)
    ch2 = chain.Chain.from_batch(unary, pairwise, mask)
    ch2.allow_time_chunks = False
    z2, s2 = chain.chain_viterbi(ch2)
    assert_array_equal(z1, z2)
    assert_allclose(s1, s2, rtol=1e-12, atol=0)
    paths, scores = viterbi(unary, pairwise, mask)
    r = np.arange(n)[:, None]
    own = np.where(mask, unary[r, np.arange(T), np.maximum(paths, 0)], 0).sum(1)
    own += np.where(mask[:, 1:], pairwise[np.maximum(paths[:, :-1], 0), np.maximum(paths[:, 1:], 0)], 0).sum(1)
    assert_allclose(scores, own, rtol=1e-12, atol=0)


def test_time_chunks_fall_back_when_boundaries_disagree(numpy_sweeps, rng):
    # near-zero potentials make chunk products underflow: the boundary check must
    # catch it and the rows be redone (step by step, then in log space)
    unary, pairwise = _tiny_chain(rng, 2, 3000, 4)
    ch = chain.Chain.from_batch(unary, pairwise, None)
    assert chain.use_time_chunks(ch)
    _, _, bad = chain.scaled_forward(ch)
    assert bad.all()
    ref = chain.log_forward(chain.Chain.from_batch(unary, pairwise, None))[1].sum(axis=0)
    assert_allclose(log_partition(unary, pairwise), ref, rtol=1e-12, atol=0)
    post = forward_backward(unary, pairwise, counts=True)
    assert_allclose(post.log_z, ref, rtol=1e-12, atol=0)
    assert_allclose(post.edge_counts.sum(), 2 * 2999, rtol=1e-9)


# ---------------------------------------------------------------------------
# edge cases and errors
# ---------------------------------------------------------------------------


def test_single_step_single_state_and_empty_batch(backend):
    u = np.array([[[0.3, -1.0]]])  # (1, 1, 2)
    post = forward_backward(u, np.zeros((2, 2)), edges=True)
    assert_allclose(post.log_z, [logsumexp(u[0, 0])], rtol=1e-14)
    assert post.edge_marginals.shape == (1, 0, 2, 2)
    assert_array_equal(post.edge_counts, 0.0)
    assert viterbi(u, np.zeros((1, 0, 2, 2)))[0].tolist() == [[0]]
    u1 = np.zeros((2, 3, 1))
    assert_allclose(log_partition(u1, np.full((1, 1), 0.5)), [1.0, 1.0])
    empty = forward_backward(np.zeros((0, 3, 2)), np.zeros((2, 2)))
    assert empty.marginals.shape == (0, 3, 2) and empty.log_z.shape == (0,)
    assert viterbi(np.zeros((0, 3, 2)), np.zeros((2, 2)))[0].shape == (0, 3)


def test_int_mask_and_all_true_mask(rng):
    unary, pairwise, mask, _ = _random_chain(rng, 3, 4, 2, True, True)
    a = forward_backward(unary, pairwise, mask.astype(int))
    b = forward_backward(unary, pairwise, mask)
    assert_allclose(a.marginals, b.marginals, rtol=0, atol=0)
    full = forward_backward(unary, pairwise, np.ones((3, 4), bool))
    assert_allclose(full.log_z, log_partition(unary, pairwise), rtol=1e-14)


def test_padding_values_are_ignored(backend, rng):
    unary, pairwise, mask, _ = _random_chain(rng, 4, 5, 3, False, True)
    ref = forward_backward(unary, pairwise, mask, edges=True)
    u2, p2 = unary.copy(), pairwise.copy()
    u2[~mask] = np.nan
    p2[~mask[:, 1:]] = np.inf
    got = forward_backward(u2, p2, mask, edges=True)
    assert_allclose(got.marginals, ref.marginals, rtol=0, atol=0)
    assert_allclose(got.edge_marginals, ref.edge_marginals, rtol=0, atol=0)
    assert_array_equal(viterbi(u2, p2, mask)[0], viterbi(unary, pairwise, mask)[0])


def test_errors_name_what_and_where():
    u = np.zeros((2, 3, 4))
    with pytest.raises(ShapeError, match=r"K=4 states, so expected \(4, 4\)"):
        forward_backward(u, np.zeros((3, 3)))
    with pytest.raises(ShapeError, match=r"expected \(n, T-1, K, K\) = \(2, 2, 4, 4\)"):
        forward_backward(u, np.zeros((2, 3, 4, 4)))
    with pytest.raises(ShapeError, match=r"\(n, T, K\)"):
        log_partition(np.zeros((3, 4)), np.zeros((4, 4)))
    with pytest.raises(ShapeError, match=r"mask must have shape \(n, T\) = \(2, 3\)"):
        viterbi(u, np.zeros((4, 4)), np.ones((2, 4), bool))
    with pytest.raises(ShapeError, match="row 1 is not left-aligned: step 2"):
        forward_backward(u, np.zeros((4, 4)), [[1, 1, 1], [1, 0, 1]])
    with pytest.raises(EvidenceError, match=r"row\) 1 has length 0"):
        forward_backward(u, np.zeros((4, 4)), [[1, 1, 0], [0, 0, 0]])
    bad = u.copy()
    bad[1, 2, 3] = np.nan
    with pytest.raises(ModelError, match="got nan at row 1, step 2, state 3"):
        log_partition(bad, np.zeros((4, 4)))
    P = np.zeros((4, 4))
    P[0, 2] = np.inf
    with pytest.raises(ModelError, match="pairwise potentials must be finite or -inf; got inf at from 0, to 2"):
        sample_paths(u, P, seed=0)


def test_impossible_evidence(backend):
    u = np.zeros((3, 3, 2))
    u[1, 1] = -np.inf  # row 1 has no possible state at step 1
    P = np.zeros((2, 2))
    lz = log_partition(u, P)
    assert np.isneginf(lz[1]) and np.isfinite(lz[[0, 2]]).all()
    for f in (forward_backward, viterbi, lambda a, b: sample_paths(a, b, seed=0)):
        with pytest.raises(EvidenceError, match=r"\[1\] has probability zero"):
            f(u, P)
    P2 = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    u2 = np.zeros((1, 2, 2))
    u2[0, 0, 1] = -np.inf
    u2[0, 1, 0] = -np.inf  # must start in 0 and end in 1, but 0 -> 1 is impossible
    assert np.isneginf(log_partition(u2, P2)).all()


def test_inputs_are_not_modified(backend, rng):
    for n in (1, 3):
        unary, pairwise, mask, _ = _random_chain(rng, n, 4, 3, False, True)
        u0, p0 = unary.copy(), pairwise.copy()
        forward_backward(unary, pairwise, mask, edges=True)
        viterbi(unary, pairwise, mask)
        sample_paths(unary, pairwise, mask, seed=0)
        assert_array_equal(unary, u0)
        assert_array_equal(pairwise, p0)
