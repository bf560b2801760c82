"""seq2seq against a small PyTorch encoder-decoder with the same weights (float64); beam search by enumeration."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.special import log_softmax

from causalnet import CausalNetError, ModelError
from causalnet.models import recurrent
from tests.conftest import guarded

torch = pytest.importorskip("torch")
nn = torch.nn

VS, V, E, H, S, T = 6, 5, 3, 4, 4, 3
RNNS = {"gru": nn.GRU, "lstm": nn.LSTM, "rnn": nn.RNN}


class TorchSeq2Seq(nn.Module):
    """The oracle: an encoder-decoder written directly in PyTorch, keys as seq2seq's docstring documents.

    ``patch`` maps node names ``attn[t]`` / ``dec.ht[t]`` to values that replace them, as ``do`` does.
    """

    def __init__(self, cell, attention, layers=1, bidirectional=False, input_feeding=False):
        super().__init__()
        self.cell, self.attention, self.layers, self.feed = cell, attention, layers, input_feeding
        self.bi = bidirectional
        D = 2 * H if bidirectional else H
        self.encoder, self.decoder = nn.Module(), nn.Module()
        self.encoder.embedding = nn.Embedding(VS, E)
        self.encoder.rnn = RNNS[cell](E, H, num_layers=layers, bidirectional=bidirectional, batch_first=True)
        if bidirectional:
            states = ("h", "c") if cell == "lstm" else ("h",)
            self.encoder.bridge = nn.ModuleDict({f"{s}_l{k}": nn.Linear(2 * H, H) for k in range(layers)
                                                 for s in states})
        self.decoder.embedding = nn.Embedding(V, E)
        d_in = E + D if attention == "bahdanau" else E + H if input_feeding else E
        self.decoder.rnn = RNNS[cell](d_in, H, num_layers=layers, batch_first=True)
        if attention:
            self.decoder.attention = nn.Module()
            self.decoder.attention.keys = nn.Linear(D, H, bias=False)
        if attention == "bahdanau":
            self.decoder.attention.query = nn.Linear(H, H, bias=False)
            self.decoder.attention.v = nn.Linear(H, 1, bias=False)
        if attention == "luong":
            self.decoder.combine = nn.Linear(D + H, H, bias=False)
        self.decoder.out = nn.Linear(H + D if attention == "bahdanau" else H, V)

    def _attend(self, mem, scores, t, patch):
        if self._pad is not None:
            scores = scores.masked_fill(self._pad, -torch.inf)
        a = torch.softmax(scores, dim=-1)                                     # (n, S)
        a = torch.as_tensor(patch[f"attn[{t}]"]).expand_as(a) if f"attn[{t}]" in patch else a
        return a, (a[:, :, None] * mem).sum(1)                                # (n, D)

    def _bridge(self, state):
        """Decoder layer k starts from tanh(W [h_fwd_n; h_bwd_n] + b) of encoder layer k (bidirectional)."""
        if not self.bi:
            return state

        def one(s, name):                                                     # s (2 L, n, H)
            return torch.stack([torch.tanh(self.encoder.bridge[f"{name}_l{k}"](torch.cat([s[2 * k], s[2 * k + 1]],
                                                                                          -1)))
                                for k in range(self.layers)])
        return (one(state[0], "h"), one(state[1], "c")) if self.cell == "lstm" else one(state, "h")

    def _encode(self, src, lengths):
        emb = self.encoder.embedding(src)
        if lengths is None:
            mem, state = self.encoder.rnn(emb)                                # (n, S, D)
        else:
            packed = nn.utils.rnn.pack_padded_sequence(emb, lengths, batch_first=True, enforce_sorted=False)
            mem, state = self.encoder.rnn(packed)
            mem, _ = nn.utils.rnn.pad_packed_sequence(mem, batch_first=True, total_length=src.shape[1])
        self._pad = None if lengths is None else torch.arange(src.shape[1])[None, :] >= lengths[:, None]
        return mem, self._bridge(state)

    def forward(self, src, tgt, lengths=None, patch=None):
        patch, d = patch or {}, self.decoder
        mem, state = self._encode(src, lengths)
        keys = d.attention.keys(mem) if self.attention else None
        feed = torch.zeros(src.shape[0], H, dtype=mem.dtype)
        logits, attns = [], []
        for t in range(tgt.shape[1]):
            e, a = d.embedding(tgt[:, t]), None                               # (n, E)
            if self.attention == "bahdanau":
                h_prev = (state[0] if self.cell == "lstm" else state)[-1]      # the top layer's previous state
                a, ctx = self._attend(mem, d.attention.v(torch.tanh(d.attention.query(h_prev)[:, None] + keys))[..., 0],
                                      t, patch)
                out, state = d.rnn(torch.cat([e, ctx], -1)[:, None], state)
                logits.append(d.out(torch.cat([out[:, 0], ctx], -1)))
            else:
                out, state = d.rnn((torch.cat([e, feed], -1) if self.feed else e)[:, None], state)
                h = out[:, 0]
                if self.attention == "luong":
                    a, ctx = self._attend(mem, (keys @ h[:, :, None])[..., 0], t, patch)
                    h = torch.tanh(d.combine(torch.cat([ctx, h], -1)))
                    h = torch.as_tensor(patch[f"dec.ht[{t}]"]).expand_as(h) if f"dec.ht[{t}]" in patch else h
                    feed = h
                logits.append(d.out(h))
            attns.append(a)
        return torch.stack(logits, 1), attns


def _pair(cell, attention, seed=0, src_lengths=False, **arch):
    torch.manual_seed(seed)
    mod = TorchSeq2Seq(cell, attention, **arch).double().eval()
    sd = {k: v.detach().numpy() for k, v in mod.state_dict().items()}
    m = recurrent.seq2seq(sd, src_vocab=VS, tgt_vocab=V, embed=E, hidden=H, cell=cell, attention=attention,
                          T_src=S, T_tgt=T, src_lengths=src_lengths, **arch)
    return mod, m


def _data(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, VS, (n, S)), rng.integers(0, V, (n, T))


@pytest.mark.parametrize("cell", ["gru", "lstm", "rnn"])
@pytest.mark.parametrize("attention", ["bahdanau", "luong", None])
def test_teacher_forced_logits_match_torch(cell, attention):
    mod, m = _pair(cell, attention)
    src, tgt = _data()
    with torch.no_grad():
        want, attns = mod(torch.from_numpy(src), torch.from_numpy(tgt))
    assert_allclose(recurrent.teacher_forced(m, src, tgt), want.numpy(), rtol=0, atol=1e-10)
    if attention:
        values = {**{f"src[{s}]": src[:, s] for s in range(S)}, **{f"tgt[{t}]": tgt[:, t] for t in range(T)}}
        tr = m.forward(values)
        for t in range(T):
            assert_allclose(tr[f"attn[{t}]"], attns[t].numpy(), rtol=0, atol=1e-10)


@pytest.mark.parametrize("cell,attention,arch", [
    ("gru", "bahdanau", dict()), ("lstm", "luong", dict()), ("rnn", None, dict()),
    ("lstm", "bahdanau", dict(layers=2, bidirectional=True)),
    ("gru", "luong", dict(layers=2, bidirectional=True, input_feeding=True))])
def test_variable_length_sources_match_packed_torch(cell, attention, arch):
    mod, m = _pair(cell, attention, src_lengths=True, **arch)
    src, tgt = _data()
    lengths = np.array([4, 1, 2])
    with torch.no_grad():
        want, attns = mod(torch.from_numpy(src), torch.from_numpy(tgt), torch.from_numpy(lengths))
    got = recurrent.teacher_forced(m, src, tgt, src_lengths=lengths)
    assert_allclose(got, want.numpy(), rtol=0, atol=1e-10)
    if attention:
        values = {**{f"src[{s}]": src[:, s] for s in range(S)}, **{f"tgt[{t}]": tgt[:, t] for t in range(T)}}
        attn = m.forward({**values, "src_lengths": lengths})["attn[2]"]
        assert_allclose(attn, attns[2].numpy(), rtol=0, atol=1e-10)
        assert np.all(attn[1, 1:] == 0)
    # decoding a padded batch equals decoding each source alone
    sd = {k: v.detach().numpy() for k, v in mod.state_dict().items()}
    batch = recurrent.decode(m, src, T, beam=2, eos=1, src_lengths=lengths)
    for i, L in enumerate(lengths):
        alone = recurrent.seq2seq(sd, src_vocab=VS, tgt_vocab=V, embed=E, hidden=H, cell=cell, attention=attention,
                                  T_src=int(L), T_tgt=T, **arch)
        one = recurrent.decode(alone, src[i:i + 1, :L], T, beam=2, eos=1)
        assert_allclose(batch.tokens[i], one.tokens[0], rtol=0, atol=0)
        assert_allclose(batch.scores[i], one.scores[0], rtol=0, atol=1e-12)


def test_attention_weights_are_nodes_to_intervene_on():
    _, m = _pair("gru", "bahdanau")
    src, tgt = _data()
    base = recurrent.teacher_forced(m, src, tgt)
    forced = np.eye(S)[0]                                       # step 1 looks only at the first source step
    m2 = m.do({"attn[1]": forced})
    patched = recurrent.teacher_forced(m2, src, tgt)
    assert_allclose(patched[:, 0], base[:, 0], rtol=0, atol=0)  # earlier steps unchanged
    assert not np.allclose(patched[:, 1], base[:, 1])
    tr = m2.forward({**{f"src[{s}]": src[:, s] for s in range(S)}, **{f"tgt[{t}]": tgt[:, t] for t in range(T)}})
    assert_allclose(tr["ctx[1]"], tr["enc.h[0]"], rtol=0, atol=1e-14)
    assert m.dag.has_edge("attn[1]", "ctx[1]") and "attn[1]" in m.dag.ancestors({"logits[2]"})
    # decoding runs the intervened model's own nodes
    dec = recurrent.decode(m2, src, T)
    tgt_in = np.concatenate([np.zeros((len(src), 1), int), dec.tokens[:, :-1]], axis=1)
    assert_allclose(dec.tokens, recurrent.teacher_forced(m2, src, tgt_in).argmax(-1), rtol=0, atol=0)


def _values(src, tgt, lengths=None):
    vals = {**{f"src[{s}]": src[:, s] for s in range(S)}, **{f"tgt[{t}]": tgt[:, t] for t in range(T)}}
    return vals if lengths is None else {**vals, "src_lengths": lengths}


def _check_against_torch(mod, m, lengths=None, patch=None):
    """Teacher-forced logits and every attention weight of `m` (patched with `patch`) equal the oracle's."""
    src, tgt = _data()
    tl = None if lengths is None else torch.from_numpy(lengths)
    with torch.no_grad():
        want, attns = mod(torch.from_numpy(src), torch.from_numpy(tgt), tl,
                          patch={k: torch.from_numpy(np.asarray(v, float)) for k, v in (patch or {}).items()})
    model = m.do(patch) if patch else m
    assert_allclose(recurrent.teacher_forced(model, src, tgt, src_lengths=lengths), want.numpy(), rtol=0, atol=1e-10)
    if mod.attention:
        tr = model.forward(_values(src, tgt, lengths))
        for t in range(T):
            assert_allclose(tr[f"attn[{t}]"], attns[t].numpy(), rtol=0, atol=1e-10)
    return want.numpy()


DEEP = [dict(layers=2), dict(bidirectional=True), dict(layers=3, bidirectional=True)]


@pytest.mark.parametrize("cell", ["gru", "lstm", "rnn"])
@pytest.mark.parametrize("attention", ["bahdanau", "luong", None])
def test_deep_and_bidirectional_encoders_match_torch(cell, attention):
    for arch in DEEP:
        for src_lengths in (False, True):
            mod, m = _pair(cell, attention, src_lengths=src_lengths, **arch)
            _check_against_torch(mod, m, np.array([4, 1, 2]) if src_lengths else None)


@pytest.mark.parametrize("cell", ["gru", "lstm", "rnn"])
def test_input_feeding_matches_torch(cell):
    for arch in (dict(), dict(layers=2, bidirectional=True)):
        for src_lengths in (False, True):
            mod, m = _pair(cell, "luong", input_feeding=True, src_lengths=src_lengths, **arch)
            _check_against_torch(mod, m, np.array([2, 4, 1]) if src_lengths else None)
    _, m = _pair(cell, "luong", input_feeding=True)
    assert m.dag.has_edge("dec.ht[0]", "dec.x[1]") and "dec.ht[-1]" in m.dag.parents("dec.x[0]")


@pytest.mark.parametrize("cell,attention,arch", [
    ("gru", "bahdanau", dict(layers=2, bidirectional=True)),
    ("lstm", "luong", dict(bidirectional=True, input_feeding=True)),
    ("rnn", "luong", dict(layers=2, input_feeding=True))])
def test_do_on_attention_and_attentional_vector_matches_patched_torch(cell, attention, arch):
    mod, m = _pair(cell, attention, **arch)
    base = recurrent.teacher_forced(m, *_data())
    patches = [{"attn[1]": np.eye(S)[2]}]
    if attention == "luong":
        patches += [{"dec.ht[0]": np.linspace(-0.5, 0.5, H)}, {"attn[0]": np.full(S, 1 / S), "dec.ht[1]": np.ones(H)}]
    for patch in patches:
        got = _check_against_torch(mod, m, patch=patch)
        first = min(int(k[-2]) for k in patch)
        assert_allclose(got[:, :first], base[:, :first], rtol=0, atol=1e-10)   # earlier steps untouched
        assert not np.allclose(got[:, first], base[:, first])
        if arch.get("input_feeding") and "dec.ht[0]" in patch:               # fed forward into step 1
            assert not np.allclose(got[:, 1], base[:, 1])
        patched, src = m.do(patch), _data()[0]                                # greedy decoding runs the patch
        dec = recurrent.decode(patched, src, T)
        tgt_in = np.concatenate([np.zeros((len(src), 1), int), dec.tokens[:, :-1]], axis=1)
        assert_allclose(dec.tokens, recurrent.teacher_forced(patched, src, tgt_in).argmax(-1), rtol=0, atol=0)


def _lp(end, alpha):
    return ((5 + end) / 6) ** alpha                                           # GNMT's length penalty


def _brute_force(m, src, eos, L, alpha=0.0):
    """Best sequence per row by enumerating every continuation (eos ends a sequence and then repeats).

    Ranked by log P / ((5 + |Y|) / 6) ** alpha, |Y| the tokens up to and including eos; returns (log P, tokens).
    """
    seqs = [q for q in itertools.product(range(m.spec("logits[0]").shape[-1]), repeat=L)
            if eos not in q or all(x == eos for x in q[q.index(eos):])]        # tokens after eos must be eos
    tgt_in = np.array([[0, *q[:T - 1]] for q in seqs])                           # (m, T) every prefix at once
    ends = [q.index(eos) + 1 if eos in q else L for q in seqs]
    best = []
    for row in src:
        logp = log_softmax(recurrent.teacher_forced(m, np.repeat(row[None], len(seqs), 0), tgt_in), axis=-1)
        scores = [sum(logp[j, t, q[t]] for t in range(end)) for j, (q, end) in enumerate(zip(seqs, ends))]
        j = int(np.argmax([sc / _lp(end, alpha) for sc, end in zip(scores, ends)]))
        best.append((scores[j], seqs[j]))
    return best


def _plain_beam(m, row, k, eos, alpha):
    """Beam search written plainly for one source row: hypotheses (tokens, log P, |Y| once finished)."""
    def rank(h):
        return h[1] / _lp(h[2] or len(h[0]), alpha)

    hyps = [((), 0.0, None)]
    for t in range(T):
        live = [h for h in hyps if h[2] is None] or [((0,) * t, 0.0, None)]  # (an unused row when all ended)
        tgt_in = np.array([[0, *h[0], *[0] * (T - 1 - t)] for h in live])    # prefixes, padded to T
        logp = log_softmax(recurrent.teacher_forced(m, np.repeat(row[None], len(live), 0), tgt_in), -1)[:, t]
        cands, i = [], 0
        for h in hyps:
            if h[2] is not None:
                cands.append((h[0] + (eos,), h[1], h[2]))                       # finished: repeats eos
                continue
            cands += [(h[0] + (v,), h[1] + logp[i, v], t + 1 if v == eos else None) for v in range(logp.shape[1])]
            i += 1
        hyps = sorted(cands, key=lambda h: -rank(h))[:k]
    return max(hyps, key=rank)


@pytest.mark.parametrize("cell,attention,eos", [("gru", "bahdanau", 2), ("lstm", "luong", None)])
def test_beam_search_against_enumeration(cell, attention, eos):
    _, m = _pair(cell, attention, seed=1)
    src = _data(n=2, seed=2)[0]
    exact = _brute_force(m, src, eos, T)
    full = recurrent.decode(m, src, T, beam=V ** T, eos=eos)     # a beam as wide as the tree is exhaustive
    for (score, seq), toks, sc in zip(exact, full.tokens, full.scores):
        assert tuple(toks) == seq
        assert_allclose(sc, score, rtol=0, atol=1e-12)
    greedy = recurrent.decode(m, src, T, eos=eos)
    tgt_in = np.concatenate([np.zeros((2, 1), int), greedy.tokens[:, :-1]], axis=1)
    step_best = recurrent.teacher_forced(m, src, tgt_in).argmax(-1)
    for row, toks in zip(step_best, greedy.tokens):
        end = list(toks).index(eos) + 1 if eos is not None and eos in toks else T
        assert list(toks[:end]) == list(row[:end])
    assert np.all(full.scores >= greedy.scores - 1e-12)
    assert np.all(recurrent.decode(m, src, T, beam=3, eos=eos).scores <= full.scores + 1e-12)


def test_errors_are_typed():
    with pytest.raises(ModelError, match="attention"):
        recurrent.seq2seq(src_vocab=3, tgt_vocab=3, embed=2, hidden=2, T_src=2, T_tgt=2, attention="dot")
    with pytest.raises(ModelError, match="cell"):
        recurrent.seq2seq(src_vocab=3, tgt_vocab=3, embed=2, hidden=2, T_src=2, T_tgt=2, cell="tcn")
    sd = recurrent.seq2seq_weights(src_vocab=3, tgt_vocab=3, embed=2, hidden=2, attention="luong", seed=0)
    with pytest.raises(ModelError, match="decoder"):
        recurrent.seq2seq(sd, src_vocab=3, tgt_vocab=3, embed=2, hidden=2, T_src=2, T_tgt=2, attention="bahdanau")
    with pytest.raises(ModelError, match="not used"):
        recurrent.seq2seq(sd, src_vocab=3, tgt_vocab=3, embed=2, hidden=2, T_src=2, T_tgt=2, attention=None)
    with pytest.raises(ModelError, match="src_vocab|embedding"):
        recurrent.seq2seq(sd, src_vocab=4, tgt_vocab=3, embed=2, hidden=2, T_src=2, T_tgt=2, attention="luong")
    m = recurrent.seq2seq(sd, src_vocab=3, tgt_vocab=3, embed=2, hidden=2, T_src=2, T_tgt=2, attention="luong")
    for bad in [dict(max_len=3), dict(max_len=2, beam=0), dict(max_len=2, eos=3), dict(max_len=2, bos=-1)]:
        with pytest.raises(ModelError):
            recurrent.decode(m, np.zeros((1, 2), int), **bad)
    for src in [np.zeros((1, 3), int), np.zeros((1, 2)), np.array([[0, 7]])]:
        with pytest.raises(CausalNetError, match="src"):
            recurrent.decode(m, src, 2)
    with pytest.raises(CausalNetError, match="src_lengths"):
        recurrent.decode(m, np.zeros((1, 2), int), 2, src_lengths=[1])
    padded = recurrent.seq2seq(sd, src_vocab=3, tgt_vocab=3, embed=2, hidden=2, T_src=2, T_tgt=2, attention="luong",
                               src_lengths=True)
    for bad in [None, [0], [3], [1, 2]]:
        with pytest.raises(CausalNetError, match="src_lengths"):
            recurrent.decode(padded, np.zeros((1, 2), int), 2, src_lengths=bad)


def _build(sd=None, **kw):
    args = dict(src_vocab=3, tgt_vocab=3, embed=2, hidden=2, T_src=2, T_tgt=2, cell="lstm", attention="luong", seed=0)
    return recurrent.seq2seq(sd, **{**args, **kw})


def test_bad_architectures_name_the_argument():
    for kw, word in [(dict(layers=0), "layers"), (dict(layers=1.5), "layers"), (dict(layers=True), "layers"),
                     (dict(bidirectional="yes"), "bidirectional"), (dict(input_feeding=1), "input_feeding"),
                     (dict(input_feeding=True, attention="bahdanau"), "input_feeding"),
                     (dict(input_feeding=True, attention=None), "input_feeding")]:
        err = guarded(_build, **kw)
        assert isinstance(err, ModelError) and word in str(err), (kw, err)
        err = guarded(recurrent.seq2seq_weights, src_vocab=3, tgt_vocab=3, embed=2, hidden=2, **kw)
        assert isinstance(err, ModelError) and word in str(err), (kw, err)


def test_state_dicts_of_another_architecture_are_refused():
    def weights(**kw):
        return recurrent.seq2seq_weights(src_vocab=3, tgt_vocab=3, embed=2, hidden=2, cell="lstm", attention="luong",
                                         seed=0, **kw)

    deep, bi, fed = weights(layers=2), weights(bidirectional=True), weights(input_feeding=True)
    cases = [(deep, dict(), "layers=1"), (weights(), dict(layers=2), "weight_hh_l1"),
             (bi, dict(), "bidirectional=True"), (weights(), dict(bidirectional=True), "reverse"),
             (fed, dict(), "decoder.rnn.weight_ih_l0"), (weights(), dict(input_feeding=True), "decoder.rnn.weight_ih_l0"),
             ({k: v for k, v in bi.items() if "bridge.c_l0" not in k}, dict(bidirectional=True), "bridge.c_l0"),
             ({**bi, "encoder.bridge.h_l0.weight": np.zeros((2, 3))}, dict(bidirectional=True), "bridge.h_l0"),
             ({**deep, "encoder.rnn.weight_ih_l1": np.zeros((8, 3))}, dict(layers=2), "encoder.rnn.weight_ih_l1"),
             ({**deep, "decoder.rnn.weight_hh_l1": np.zeros((8, 3))}, dict(layers=2), "decoder.rnn.weight_hh_l1"),
             ({**bi, "encoder.bridge.extra": np.zeros(2)}, dict(bidirectional=True), "not used"),
             ({**deep, "decoder.out.weight": np.zeros((4, 2))}, dict(layers=2), "decoder.out.weight")]
    for sd, kw, word in cases:
        err = guarded(_build, sd, **kw)
        assert isinstance(err, ModelError) and word in str(err), (kw, word, err)
    for sd, kw in [(deep, dict(layers=2)), (bi, dict(bidirectional=True)), (fed, dict(input_feeding=True))]:
        assert _build(sd, **kw).forward({"src[0]": [0], "src[1]": [1], "tgt[0]": [0], "tgt[1]": [2]})


@pytest.mark.parametrize("cell,attention,arch", [
    ("gru", "bahdanau", dict()),
    ("lstm", "luong", dict(layers=2, bidirectional=True, input_feeding=True)),
    ("rnn", None, dict(bidirectional=True))])
def test_length_penalty_against_enumeration_and_a_plain_beam(cell, attention, arch):
    _, m = _pair(cell, attention, seed=3, **arch)
    src, eos = _data(n=3, seed=4)[0], 2
    winners = set()
    for alpha in (0.0, 0.6, 1.0, 4.0, -1.0):
        exact = _brute_force(m, src, eos, T, alpha)
        full = recurrent.decode(m, src, T, beam=V ** T, eos=eos, length_penalty=alpha)
        for (score, seq), toks, sc in zip(exact, full.tokens, full.scores):
            assert tuple(toks) == seq
            assert_allclose(sc, score, rtol=0, atol=1e-12)
        winners.add(tuple(map(tuple, full.tokens)))
        for k in (2, 3):
            got = recurrent.decode(m, src, T, beam=k, eos=eos, length_penalty=alpha)
            for row, toks, sc in zip(src, got.tokens, got.scores):
                seq, score, _ = _plain_beam(m, row, k, eos, alpha)
                assert tuple(toks) == seq
                assert_allclose(sc, score, rtol=0, atol=1e-12)
    assert len(winners) > 1                                 # the penalty changes which hypothesis wins
    assert_allclose(recurrent.decode(m, src, T, beam=3, eos=eos, length_penalty=0).scores,
                    recurrent.decode(m, src, T, beam=3, eos=eos).scores, rtol=0, atol=0)


def test_bad_length_penalties_are_refused():
    m = _build()
    src = np.zeros((1, 2), int)
    for kw, word in [(dict(length_penalty=0.6), "beam"), (dict(beam=2, length_penalty=0.6), "eos"),
                     (dict(beam=2, eos=1, length_penalty=np.nan), "length_penalty"),
                     (dict(beam=2, eos=1, length_penalty=np.inf), "length_penalty"),
                     (dict(beam=2, eos=1, length_penalty="0.6"), "length_penalty"),
                     (dict(beam=2, eos=1, length_penalty=True), "length_penalty")]:
        err = guarded(recurrent.decode, m, src, 2, **kw)
        assert isinstance(err, ModelError) and word in str(err) and "length_penalty" in str(err), (kw, err)
    assert guarded(recurrent.decode, m, src, 2, beam=2, eos=1, length_penalty=0.6).tokens.shape == (1, 2)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2 ** 16), alpha=st.floats(-2, 4), k=st.integers(2, 9), eos=st.integers(0, 2))
def test_length_penalised_beam_property(seed, alpha, k, eos):
    """Any beam equals the plain beam search; the exhaustive one equals enumeration and ranks at least as high."""
    m = recurrent.seq2seq(src_vocab=VS, tgt_vocab=3, embed=E, hidden=H, cell="gru", attention="luong", T_src=S,
                          T_tgt=T, bidirectional=True, input_feeding=True, seed=seed)
    src = _data(n=2, seed=seed)[0]
    got = recurrent.decode(m, src, T, beam=k, eos=eos, length_penalty=alpha)
    full = recurrent.decode(m, src, T, beam=3 ** T, eos=eos, length_penalty=alpha)
    for i, (row, (score, seq)) in enumerate(zip(src, _brute_force(m, src, eos, T, alpha))):
        assert tuple(full.tokens[i]) == seq and abs(full.scores[i] - score) < 1e-12
        plain = _plain_beam(m, row, k, eos, alpha)
        assert tuple(got.tokens[i]) == plain[0] and abs(got.scores[i] - plain[1]) < 1e-12
        end = plain[2] or T
        assert plain[1] / _lp(end, alpha) <= score / _lp(seq.index(eos) + 1 if eos in seq else T, alpha) + 1e-12
