"""Shared by the explorer tests: the renderer check and a headless Chromium driven by Selenium."""

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from causalnet.io.dot import find_renderer

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,900"]

needs_renderer = pytest.mark.skipif(find_renderer() is None, reason="no diagram renderer (dot or graphviz-pure)")


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium (Debian's chromium + chromium-driver, installed by .ci/run); skipped when absent."""
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip(f"browser tests need {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="browser tests need selenium (the dev extra)")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="causalnet-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="session")
def shots(tmp_path_factory):
    """Where screenshots go: $CAUSALNET_EXPLORER_SCREENSHOTS (docs/img/explorer for the docs), else a temp dir."""
    target = os.environ.get("CAUSALNET_EXPLORER_SCREENSHOTS")
    path = Path(target) if target else tmp_path_factory.mktemp("explorer-shots")
    path.mkdir(parents=True, exist_ok=True)
    return path


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
