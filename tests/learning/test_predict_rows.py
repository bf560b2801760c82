"""predict_proba / predict on a DataFrame equal one query per row."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.inference.frames import predict, predict_proba


def test_predict_proba_equals_row_by_row_queries(asia):
    df = asia.sample(30, seed=2).to_pandas().drop(columns=["either"]).astype(object)
    rng = np.random.default_rng(0)
    df = df.mask(rng.random(df.shape) < 0.3)
    probs = predict_proba(asia, df, "lung")
    for i, (_, row) in enumerate(df.iterrows()):
        ev = {k: v for k, v in row.items() if k != "lung" and v is not None and v == v}
        assert_allclose(probs[i], asia.query("lung", evidence=ev).probs, rtol=0, atol=1e-12)


def test_predict_fills_missing_cells_with_map(sprinkler):
    df = pd.DataFrame({"Rain": ["yes", None, "no"], "Wet": ["wet", "dry", None]})
    out = predict(sprinkler, df)
    assert list(out["Rain"])[0] == "yes" and list(out["Wet"])[:2] == ["wet", "dry"]
    for i, node in ((1, "Rain"), (2, "Wet")):
        ev = {k: v for k, v in df.iloc[i].items() if pd.notna(v)}
        probs = sprinkler.query(node, evidence=ev).probs
        assert out[node].iloc[i] == sprinkler.states(node)[int(np.argmax(probs))]
    assert "Sprinkler" in out.columns and out["Sprinkler"].notna().all()
    assert df["Rain"].isna().sum() == 1        # input untouched


def test_predict_bad_column(sprinkler):
    with pytest.raises(cn.EvidenceError, match="'Snow' of the data frame is not a node"):
        predict_proba(sprinkler, pd.DataFrame({"Snow": [1]}), "Wet")
    with pytest.raises(cn.ModelError, match="discrete node"):
        predict_proba(sprinkler, pd.DataFrame({"Rain": ["no"]}), "Nope")
