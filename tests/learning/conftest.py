"""Fixtures shared by the learning tests."""

import pytest


@pytest.fixture(scope="module")
def client():
    """A one-worker, one-thread in-process Dask cluster (tests that use it skip without dask.distributed)."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c
