"""The twin network's noise cells are sized against ``cn.limits`` before they are allocated (issue 31).

A node with 20 binary parents and a generic CPT cuts its noise ``u`` into ~2^20
intervals, so the twin network's one-hot table of that node would hold
2^20 x 2^20 x 2 entries (16 TiB, 26 TiB with the intermediate arrays). The exact engine refuses it with a
ResourceError naming the node and the size before allocating; ``method="auto"``
falls back to the sampled engine, whose answer is checked against a brute-force
oracle of the inverse-CDF SCM. Every call goes through ``conftest.guarded``
with a bound on the peak allocation.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.errors import ResourceError
from causalnet.inference.counterfactual import noise_intervals
from tests.conftest import guarded

MiB = 2**20


def _wide(k: int, seed: int = 0):
    """X with k binary uniform parents P0..P{k-1} and a random CPT; returns (model, table)."""
    rng = np.random.default_rng(seed)
    table = rng.dirichlet([1.0, 1.0], size=(2,) * k)                       # (2,)*k + (2,)
    mechs = {f"P{i}": cn.Categorical([0.5, 0.5]) for i in range(k)}
    mechs["X"] = cn.CPT([f"P{i}" for i in range(k)], table)
    return cn.CausalModel(mechs), table


def _oracle(table: np.ndarray) -> float:
    """P(X_{P0=0} = 1 | X = 1) under x = [u >= F(0 | pa)], u ~ U(0, 1) shared, parents uniform."""
    f0 = table[..., 0]                                                      # F(0 | pa), (2,)*k
    f0_do = np.broadcast_to(f0[0], f0.shape)                                # the same rows with P0 = 0
    return float(np.mean(1.0 - np.maximum(f0, f0_do)) / np.mean(1.0 - f0))


def test_twenty_binary_parents_is_a_resource_error_naming_the_node_and_size():
    m, _ = _wide(20)
    err = guarded(m.counterfactual, "X", evidence={"X": 1}, do={"P0": 0}, method="exact", peak_bytes=256 * MiB)
    assert isinstance(err, ResourceError) and isinstance(err, MemoryError)
    assert "'X'" in str(err) and "26.0 TiB" in str(err) and "max_table_bytes" in str(err)
    assert "1048576 parent configurations" in str(err)


def test_twenty_binary_parents_auto_samples_and_agrees_with_the_oracle():
    m, table = _wide(20)
    got = guarded(m.counterfactual, "X", evidence={"X": 1}, do={"P0": 0}, seed=3, peak_bytes=512 * MiB)
    assert "likelihood weighting" in got.method and "ResourceError" in got.method
    want = _oracle(table)
    assert abs(got[1] - want) <= 5 * got.std_err[1] + 1e-3, (got[1], want, got.std_err)


def test_a_lower_limit_refuses_before_allocating_and_a_higher_one_answers_exactly():
    m, table = _wide(8)
    with cn.limits.override(max_table_bytes=64 * 1024):
        err = guarded(m.counterfactual, "X", evidence={"X": 1}, do={"P0": 0}, method="exact", peak_bytes=2 * MiB)
    assert isinstance(err, ResourceError) and "'X'" in str(err)
    got = guarded(m.counterfactual, "X", evidence={"X": 1}, do={"P0": 0}, method="exact")
    assert_allclose(got[1], _oracle(table), rtol=0, atol=1e-12)


def test_noise_intervals_checks_before_it_allocates():
    table = np.random.default_rng(1).dirichlet([1.0, 1.0, 1.0], size=(2,) * 12)
    with cn.limits.override(max_table_bytes=MiB):
        err = guarded(noise_intervals, table, "Z", peak_bytes=8 * MiB)
    assert isinstance(err, ResourceError) and "'Z'" in str(err) and "4096 parent configurations" in str(err)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(0, 10_000))
def test_the_exact_twin_agrees_with_the_oracle(k, seed):
    m, table = _wide(k, seed)
    got = guarded(m.counterfactual, "X", evidence={"X": 1}, do={"P0": 0}, method="exact")
    assert_allclose(got[1], _oracle(table), rtol=0, atol=1e-10)


@pytest.mark.parametrize("limit", [4 * 1024, 64 * 1024, 2**30])
def test_the_limit_is_honoured_or_the_answer_is_exact(limit):
    m, table = _wide(7, seed=5)
    with cn.limits.override(max_table_bytes=limit):
        out = guarded(m.counterfactual, "X", evidence={"X": 1}, do={"P0": 0}, method="exact",
                      peak_bytes=max(8 * limit, 16 * MiB))
    if isinstance(out, ResourceError):
        assert "'X'" in str(out)
    else:
        assert_allclose(out[1], _oracle(table), rtol=0, atol=1e-10)
