"""Flat token values cut back into sequences.

The CRF keeps token values flat (features and labels are flat); the padded
batch the chain engine works on is :class:`causalnet.inference.chain.layout.Layout`.

Examples
--------
>>> import numpy as np
>>> split(["a", "b", "c", "d"], np.array([1, 3]))
[['a'], ['b', 'c', 'd']]
"""

from __future__ import annotations

import numpy as np

__all__ = ["split"]


def split(flat, lengths):
    """A flat list of token values cut into one list per sequence."""
    ends = np.cumsum(lengths).tolist()
    starts = [0] + ends[:-1]
    return [flat[a:b] for a, b in zip(starts, ends)]
