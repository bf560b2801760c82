"""A seeded synthetic tagging task for CRF tests, benchmarks and examples.

Labels follow a sticky Markov chain (an HMM's hidden states); each label
draws words from its own Zipf-shaped distribution over a shared vocabulary,
with label-typical suffixes, title case and digits. Each token then gets
about 19 CRFsuite-style features (word, suffixes, prefix, shape flags,
neighbour words, a word bigram), as a tagging tutorial would build them.

Examples
--------
>>> X, y = synthetic_tagging(3, mean_len=5, n_words=50, seed=0)
>>> len(X), [len(s) for s in X] == [len(s) for s in y]
(3, True)
>>> sorted(X[0][0])[:4]
['+1:isdigit', '+1:istitle', '+1:s3', '+1:w']
"""

from __future__ import annotations

import numpy as np

__all__ = ["synthetic_tagging"]

# Symbols: K labels, N tokens, T steps.

_SUFFIXES = np.array(["ing", "ed", "ly", "er", "s", "tion", "al", "ous", "ive", "ment", "ist", "ize"], dtype=object)


def synthetic_tagging(n_seq, *, mean_len=20, n_labels=9, n_words=100_000, seed=None):
    """Labelled sequences of feature dicts from a seeded HMM-like source.

    Parameters
    ----------
    n_seq : int
        Number of sequences.
    mean_len : float, default 20
        Poisson mean of the sequence lengths (at least 3 each).
    n_labels : int, default 9
        Labels ``"L0"``, ``"L1"``, ...
    n_words : int, default 100_000
        Vocabulary size.
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    X : list of lists of dicts
    y : list of lists of str
    """
    rng = np.random.default_rng(seed)
    K = n_labels
    A = rng.dirichlet(np.full(K, 0.3), size=K) + 1.5 * np.roll(np.eye(K), 1, axis=1) + 0.8 * np.eye(K)
    A /= A.sum(1, keepdims=True)  # (K, K)
    pi = rng.dirichlet(np.ones(K))
    words, lab_suf, cum = _vocabulary(rng, K, n_words)
    lengths = np.clip(rng.poisson(mean_len, size=n_seq), 3, None)
    zf = _label_chain(rng, A, pi, lengths)  # (N,)
    w = _emit_words(rng, zf, words, lab_suf, cum)
    names = [f"L{k}" for k in range(K)]
    zl = zf.tolist()
    X, y = [], []
    off = 0
    for L in lengths.tolist():
        X.append(_sequence_features(w[off : off + L]))
        y.append([names[k] for k in zl[off : off + L]])
        off += L
    return X, y


def _vocabulary(rng, K, n_words):
    """Words (n_words,), each label's 3 suffix ids (K, 3) and word CDFs (K, n_words)."""
    syl = np.array([a + b for a in "bcdfghklmnprstvz" for b in "aeiou"])
    parts = rng.choice(syl, size=(n_words, 3))
    nsyl = rng.integers(1, 4, size=n_words)
    words = np.array(["".join(p[:k]) for p, k in zip(parts, nsyl)], dtype=object)
    lab_suf = rng.integers(0, len(_SUFFIXES), size=(K, 3))
    base = 1.0 / np.arange(1, n_words + 1) ** 0.9
    cum = np.empty((K, n_words))  # per-label cumulative word distribution
    for k in range(K):
        p = np.empty(n_words)
        p[rng.permutation(n_words)] = base
        cum[k] = np.cumsum(p / p.sum())
    return words, lab_suf, cum


def _label_chain(rng, A, pi, lengths):
    """Labels of every token (N,), in token order, from the Markov chain (pi, A)."""
    K = A.shape[0]
    n_seq = lengths.size
    T = int(lengths.max())
    z = np.empty((n_seq, T), np.intp)
    z[:, 0] = np.minimum(np.searchsorted(np.cumsum(pi), rng.random(n_seq)), K - 1)
    cA = np.cumsum(A, axis=1)
    for t in range(1, T):
        z[:, t] = np.minimum((rng.random(n_seq)[:, None] > cA[z[:, t - 1]]).sum(1), K - 1)
    return z[np.arange(T) < lengths[:, None]]  # (N,) labels in token order


def _emit_words(rng, zf, words, lab_suf, cum):
    """A word (str) for every token given its label."""
    K, n_words = cum.shape
    N = zf.size
    u = rng.random(N)
    wid = np.empty(N, np.intp)
    for k in range(K):
        s = zf == k
        wid[s] = np.minimum(np.searchsorted(cum[k], u[s]), n_words - 1)
    w = words[wid]
    r = rng.random((3, N))
    sufs = _SUFFIXES[lab_suf[zf, rng.integers(0, 3, N)]]
    add = r[0] < 0.7
    w[add] = w[add] + sufs[add]
    tit = (zf % 3 == 0) & (r[1] < 0.8)
    w[tit] = [x.title() for x in w[tit]]
    dig = (zf == 4) & (r[2] < 0.5)
    w[dig] = [str(x) for x in rng.integers(0, 3000, int(dig.sum()))]
    return w.tolist()


def _sequence_features(ws):
    """CRFsuite-style feature dicts of one sequence of words."""
    L = len(ws)
    low = [v.lower() for v in ws]
    tt = [v.istitle() for v in ws]
    dd = [v.isdigit() for v in ws]
    s3 = [v[-3:] for v in low]
    feats = []
    for t in range(L):
        v = ws[t]
        f = {
            "bias": 1.0,
            "w": low[t],
            "s3": s3[t],
            "s2": v[-2:],
            "p2": low[t][:2],
            "isupper": v.isupper(),
            "istitle": tt[t],
            "isdigit": dd[t],
            "len": str(min(len(v), 10)),
        }
        if t > 0:
            f.update(
                {
                    "-1:w": low[t - 1],
                    "-1:w|w": low[t - 1] + "|" + low[t],
                    "-1:s2": ws[t - 1][-2:],
                    "-1:istitle": tt[t - 1],
                    "-1:s3": s3[t - 1],
                    "-1:isdigit": dd[t - 1],
                }
            )
        else:
            f["BOS"] = True
        if t < L - 1:
            f.update({"+1:w": low[t + 1], "+1:istitle": tt[t + 1], "+1:s3": s3[t + 1], "+1:isdigit": dd[t + 1]})
        else:
            f["EOS"] = True
        feats.append(f)
    return feats
