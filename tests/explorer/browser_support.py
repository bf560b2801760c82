"""Helpers of the explorer browser tests: the renderer check, Chromium's paths and flags, waiting.

(A module of its own, not a conftest.py: tests/conftest.py is imported as ``conftest`` by other tests.)
"""

import time

import pytest

from causalnet.io.dot import find_renderer

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,900"]

needs_renderer = pytest.mark.skipif(find_renderer() is None, reason="no diagram renderer (dot or graphviz-pure)")


def wait_for(fn, timeout=30.0, what="the page"):
    """Poll `fn` until it returns a truthy value; fail naming `what` after `timeout` seconds."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - the element may not exist yet
            last = e
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}; last value {last!r}")
