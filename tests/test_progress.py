"""The shared progress-bar helper: auto on a terminal or notebook, off in CI and when asked."""

from __future__ import annotations

import io

import numpy as np
import pytest

from causalnet import progress as P
from causalnet.models.causal_head import CausalHead
from causalnet.models.crf import CRF


class _Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("ci, tty, expected", [("", True, True), ("true", True, False), ("1", True, False),
                                               ("false", True, True), ("", False, False)])
def test_auto_follows_the_terminal_and_ci(monkeypatch, ci, tty, expected):
    monkeypatch.setenv("CI", ci)
    monkeypatch.setattr(P.sys, "stderr", _Tty() if tty else io.StringIO())
    assert P.progress_enabled(None) is expected
    assert P.progress_enabled(True) is True and P.progress_enabled(False) is False


def test_a_disabled_bar_prints_nothing_and_still_iterates(monkeypatch):
    err = _Tty()
    monkeypatch.setattr(P.sys, "stderr", err)
    monkeypatch.setenv("CI", "true")
    assert list(P.progress_bar(range(4), desc="x")) == [0, 1, 2, 3]
    bar = P.progress_bar(3, progress=False)
    bar.update(3)
    bar.set_postfix(loss="1")
    bar.close()
    assert err.getvalue() == ""


def test_an_enabled_bar_writes_to_the_given_stream():
    out = io.StringIO()
    for _ in P.progress_bar(range(3), progress=True, desc="demo", file=out, leave=True):
        pass
    assert "demo" in out.getvalue() and "3/3" in out.getvalue()


def test_crf_and_head_training_show_a_bar_only_when_asked(capsys, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    X, y = [[{"w": "a"}, {"w": "b"}]], [["A", "B"]]
    CRF(max_iterations=3, progress=False).fit(X, y)
    assert capsys.readouterr().err == ""
    CRF(max_iterations=3, progress=True).fit(X, y)
    assert "CRF.fit" in capsys.readouterr().err


    head = CausalHead.initialise(vocab_size=3, hidden=2, num_id=2, seed=0)
    z, lab = np.zeros((2, 2, 2)), np.zeros((2, 2), int)
    head.fit(z, lab, steps=2, progress=False)
    assert capsys.readouterr().err == ""
    head.fit(z, lab, steps=2, progress=True)
    assert "CausalHead.fit" in capsys.readouterr().err
