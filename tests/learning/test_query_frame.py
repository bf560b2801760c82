"""m.query(targets, evidence=DataFrame): one answer per row, missing cells unobserved; predict; to_pandas round trip."""

import numpy as np
import pandas as pd
import pytest
from conftest import guarded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn


def _masked(model, n, seed, drop=(), p=0.35):
    df = model.sample(n, seed=seed).to_pandas().drop(columns=list(drop))
    mask = np.random.default_rng(seed).random(df.shape) < p
    return df.astype(object).mask(mask)


def _row_evidence(row):
    return {k: v for k, v in row.items() if v is not None and not (isinstance(v, float) and np.isnan(v))}


def test_frame_evidence_equals_per_row_queries(asia):
    df = _masked(asia, 40, seed=3, drop=["lung", "bronc", "either"])
    d = asia.query(["lung", "bronc"], evidence=df)
    assert d.batched and d.probs.shape == (40, 2, 2)
    for i in range(len(df)):
        ev = _row_evidence(df.iloc[i])
        ref = asia.query(["lung", "bronc"], evidence=ev or None)
        assert_allclose(d.probs[i], ref.probs, rtol=0, atol=1e-12)
        assert_allclose(d.log_evidence[i], ref.log_evidence if ev else 0.0, rtol=0, atol=1e-10)


def test_frame_evidence_matches_pgmpy(asia):
    VariableElimination = pytest.importorskip("pgmpy.inference").VariableElimination
    ve = VariableElimination(cn.io.pgmpy.to_pgmpy(asia))
    df = _masked(asia, 12, seed=5, drop=["dysp"], p=0.4)
    probs = asia.query("dysp", evidence=df).probs
    for i in range(len(df)):
        ev = {k: str(v) for k, v in _row_evidence(df.iloc[i]).items()}
        ref = ve.query(["dysp"], evidence=ev, show_progress=False)
        order = [ref.state_names["dysp"].index(s) for s in asia.states("dysp")]
        assert_allclose(probs[i], ref.values[order], rtol=0, atol=1e-10)


def test_frame_rows_keep_order_with_index_and_categoricals(sprinkler):
    df = pd.DataFrame({"Rain": pd.Categorical(["yes", None, "no", None], categories=["no", "yes"]),
                       "Sprinkler": ["on", "off", None, None]}, index=[10, 3, 7, 1])
    d = sprinkler.query("Wet", evidence=df)
    for i, (_, row) in enumerate(df.iterrows()):
        ev = {k: v for k, v in row.items() if pd.notna(v)}
        assert_allclose(d.probs[i], sprinkler.query("Wet", evidence=ev or None).probs, rtol=0, atol=1e-12)
    assert d.to_pandas().shape == (4, 2)


def test_frame_indices_and_per_row_do(sprinkler):
    df = pd.DataFrame({"Rain": [1, 0, np.nan]})          # indices; a float column because of the NaN
    do = {"Sprinkler": ["on", "off", "on"]}
    d = sprinkler.query("Wet", evidence=df, do=do)
    for i, (r, s) in enumerate([("yes", "on"), ("no", "off"), (None, "on")]):
        ref = sprinkler.query("Wet", evidence={"Rain": r} if r else None, do={"Sprinkler": s})
        assert_allclose(d.probs[i], ref.probs, rtol=0, atol=1e-12)


def test_frame_gaussian_one_pattern_and_refused_mix(linear_gaussian):
    df = pd.DataFrame({"Z": [0.0, 1.0, -2.0], "X": [0.5, 0.1, 1.0]})
    g = linear_gaussian.query("Y", evidence=df)
    for i in range(3):
        ref = linear_gaussian.query("Y", evidence={"Z": df.Z[i], "X": df.X[i]})
        assert_allclose(g.mean[i], ref.mean, rtol=0, atol=1e-12)
    mixed = pd.DataFrame({"Z": [0.0, np.nan], "X": [0.5, 0.1]})
    with pytest.raises(cn.ModelError, match="missing cells"):
        linear_gaussian.query("Y", evidence=mixed)
    filled = linear_gaussian.predict(mixed, columns=["Y"])
    assert_allclose(filled["Y"][1], linear_gaussian.query("Y", evidence={"X": 0.1}).mean[0], rtol=0, atol=1e-12)


def test_frame_evidence_errors(sprinkler):
    with pytest.raises(cn.EvidenceError, match="'Wet' is a target"):
        sprinkler.query("Wet", evidence=pd.DataFrame({"Wet": ["dry"], "Rain": ["no"]}))
    d = sprinkler.query("Wet", evidence=pd.DataFrame({"Wet": [None], "Rain": ["no"]}))   # empty target column: fine
    assert d.probs.shape == (1, 2)
    with pytest.raises(cn.EvidenceError, match="no rows"):
        sprinkler.query("Wet", evidence=pd.DataFrame({"Rain": []}))
    with pytest.raises(cn.EvidenceError, match="no state 'maybe'"):
        sprinkler.query("Wet", evidence=pd.DataFrame({"Rain": ["no", "maybe"]}))
    m = cn.CausalModel({"A": cn.Categorical([1.0, 0.0]), "B": cn.CPT(["A"], [[0.5, 0.5], [0.5, 0.5]])})
    with pytest.raises(cn.EvidenceError):                 # row 1 has probability zero
        m.query("B", evidence=pd.DataFrame({"A": [0, 1]}))


def test_predict_returns_categoricals_and_decodes_indices(sprinkler):
    df = pd.DataFrame({"Rain": [1, None, 0], "Wet": ["wet", "dry", None]})
    out = sprinkler.predict(df)
    assert str(out["Rain"].dtype) == "category" and list(out["Rain"].cat.categories) == ["no", "yes"]
    assert list(out["Rain"])[0] == "yes" and list(out["Rain"])[2] == "no"
    probs = sprinkler.query("Rain", evidence={"Wet": "dry"}).probs
    assert out["Rain"][1] == sprinkler.states("Rain")[int(np.argmax(probs))]
    proba = sprinkler.predict_proba(df, "Sprinkler")
    assert proba.shape == (3, 2)
    assert_allclose(proba[2], sprinkler.query("Sprinkler", evidence={"Rain": "no"}).probs, rtol=0, atol=1e-12)


def test_samples_to_pandas_round_trips_through_fit():
    m = cn.CausalModel({
        "A": cn.Categorical([0.3, 0.7], states=["yes", "no"]),            # not sorted: order kept by categoricals
        "B": cn.CPT(["A"], [[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]], states=["z", "c", "m"]),
    })
    df = m.sample(4000, seed=1).to_pandas()
    assert all(str(df[c].dtype) == "category" for c in df.columns)
    fitted = cn.fit(m.dag, df)
    assert fitted.states("A") == ("yes", "no") and fitted.states("B") == ("z", "c", "m")
    assert_allclose(fitted.mechanisms["B"].table, m.mechanisms["B"].table, atol=0.04)
    refit = m.fit(df)
    assert_allclose(refit.mechanisms["B"].table, fitted.mechanisms["B"].table, rtol=0, atol=0)


CELLS = st.sampled_from(["no", "yes", "off", "on", "dry", "wet", 0, 1, 2, -1, 0.5, 1.0, np.nan, None, pd.NA, True,
                         np.inf, "maybe", "", (1,), b"no"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(CELLS, CELLS, CELLS), min_size=0, max_size=5),
       st.sampled_from([["Rain", "Sprinkler"], ["Rain", "Wet"], ["Sprinkler", "Wet", "Rain"], ["Rain", "Snow"]]))
def test_frame_inputs_give_an_answer_or_a_typed_error(sprinkler, rows, columns):
    df = pd.DataFrame([r[:len(columns)] for r in rows], columns=columns, dtype=object)
    target = next(v for v in sprinkler.nodes if v not in columns) if set(columns) != set(sprinkler.nodes) else "Wet"
    out = guarded(sprinkler.query, target, evidence=df.drop(columns=[target], errors="ignore"))
    if not isinstance(out, Exception):
        assert out.probs.shape == (len(df), 2)
        assert_allclose(out.probs.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    guarded(sprinkler.predict, df)
    guarded(sprinkler.predict_proba, df, "Rain")


def test_frame_real_column_with_text_is_a_typed_error(linear_gaussian):
    with pytest.raises(cn.EvidenceError, match="'Z' is a continuous node but holds the value 'abc'"):
        linear_gaussian.query("Y", evidence=pd.DataFrame({"Z": [0.5, "abc"]}))


def test_other_front_doors_name_where_frames_go(sprinkler):
    with pytest.raises(cn.EvidenceError, match="DataFrame of evidence rows is taken by model.query"):
        sprinkler.map(evidence=pd.DataFrame({"Rain": ["no"]}))
