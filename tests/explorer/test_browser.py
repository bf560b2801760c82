"""The explorer page in a real browser (headless Chromium via Selenium): what a person clicks, what the page shows.

Every number read off the page is compared with the library's own answer (``m.query``, ``m.counterfactual``,
``g.minimal_adjustment_sets``, ``g.d_separated``) as displayed: six decimals, so to within 1e-6. A screenshot
of each step is saved (to ``$CAUSALNET_EXPLORER_SCREENSHOTS``; ``docs/img/explorer`` holds the docs' copies).
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from browser_support import CHROMEDRIVER, CHROMIUM, FLAGS, needs_renderer, wait_for

import causalnet as cn
from causalnet import gallery
from causalnet.graph.paths import is_open_path

pytestmark = [needs_renderer, pytest.mark.filterwarnings("ignore::ResourceWarning")]


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


def by_css(driver, css):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, css)


def open_page(driver, obj):
    page = cn.explore(obj, browser=False)
    driver.get(page.url)
    wait_for(lambda: driver.execute_script("return document.body.dataset.ready") == "1", what="the page to load")
    return page


def query_text(driver):
    return by_css(driver, "#query-text")[0].text


def bars(driver, node):
    """{state: displayed probability} of `node`'s bars."""
    rows = by_css(driver, f'g.cn-row[data-node="{node}"][data-state]')
    return {r.get_attribute("data-state"): float(r.find_element("css selector", "text.cn-value").text) for r in rows}


def click_menu(driver, node, button, state=None):
    by_css(driver, f'g.node[data-node="{node}"]')[0].click()
    wait_for(lambda: by_css(driver, "#node-menu")[0].is_displayed(), what=f"the menu of {node}")
    css = f"#node-menu button.{button}" + (f'[data-state="{state}"]' if state is not None else "")
    by_css(driver, css)[0].click()


def choose(driver, node, button, state, want):
    """:func:`click_menu`, then wait until the page shows the query text `want`."""
    click_menu(driver, node, button, state)
    wait_for(lambda: query_text(driver) == want, what=f"the query text {want}")


def assert_bars(driver, node, dist, states):
    shown = bars(driver, node)
    assert list(shown) == list(states)
    assert [shown[s] for s in states] == pytest.approx(np.ravel(dist.probs), abs=1e-6)


def test_sprinkler_observe_do_undo_reset(browser, shots):
    m = gallery.load("sprinkler")
    page = open_page(browser, m)
    try:
        assert query_text(browser) == "P(·)"
        assert_bars(browser, "Wet", m.query("Wet"), m.states("Wet"))
        browser.save_screenshot(str(shots / "01-sprinkler-prior.png"))

        choose(browser, "Rain", "menu-observe", "yes", "P(· | Rain=yes)")
        assert_bars(browser, "Wet", m.query("Wet", evidence={"Rain": "yes"}), m.states("Wet"))
        assert "observed" in by_css(browser, 'g.node[data-node="Rain"]')[0].get_attribute("class")
        browser.save_screenshot(str(shots / "02-sprinkler-observe-rain.png"))

        edge = by_css(browser, "#cn-e-0-1")[0]                 # Rain -> Sprinkler
        assert edge.is_displayed()
        choose(browser, "Sprinkler", "menu-do", "on", "P(· | do(Sprinkler=on), Rain=yes)")
        assert not edge.is_displayed() and "cut" in edge.get_attribute("class")
        assert by_css(browser, "#cn-e-1-2")[0].is_displayed()      # Sprinkler -> Wet stays
        want = m.query("Wet", evidence={"Rain": "yes"}, do={"Sprinkler": "on"})
        assert_bars(browser, "Wet", want, m.states("Wet"))
        assert bars(browser, "Sprinkler") == {"off": 0.0, "on": 1.0}
        browser.save_screenshot(str(shots / "03-sprinkler-do-sprinkler.png"))

        by_css(browser, "#undo")[0].click()
        wait_for(lambda: query_text(browser) == "P(· | Rain=yes)", what="undo")
        assert edge.is_displayed()
        by_css(browser, "#reset")[0].click()
        wait_for(lambda: query_text(browser) == "P(·)", what="reset")
        assert_bars(browser, "Wet", m.query("Wet"), m.states("Wet"))
    finally:
        page.stop()


def ask_adjust(driver, x, y):
    from selenium.webdriver.support.ui import Select

    Select(by_css(driver, "#cq-treatment")[0]).select_by_value(x)
    Select(by_css(driver, "#cq-outcome")[0]).select_by_value(y)
    before = driver.execute_script("return document.getElementById('cq-result').dataset.n || '0'")
    driver.execute_script("document.getElementById('cq-result').dataset.n = String(Number(arguments[0]) + 1)", before)
    by_css(driver, "#cq-ask")[0].click()
    wait_for(lambda: by_css(driver, "#cq-identifiable") and f"do({x})" in by_css(driver, "#cq-identifiable")[0].text
             or "not identifiable" in by_css(driver, "#cq-result")[0].text, what="the causal question's answer")
    items = by_css(driver, "#cq-result ul.adjust li")
    return {frozenset(json.loads(li.get_attribute("data-set"))) for li in items}


@pytest.mark.parametrize("name, pairs", [
    ("asia", [("smoke", "dysp"), ("either", "dysp"), ("tub", "xray"), ("lung", "dysp"), ("bronc", "dysp")]),
    ("sprinkler", [("Sprinkler", "Wet"), ("Rain", "Wet")]),
])
def test_adjustment_panel_shows_the_minimal_sets(browser, shots, name, pairs):
    m = gallery.load(name)
    page = open_page(browser, m)
    try:
        for x, y in pairs:
            shown = ask_adjust(browser, x, y)
            assert shown == {frozenset(s) for s in m.dag.minimal_adjustment_sets(x, y)}, (x, y)
            first = json.loads(by_css(browser, "#cq-result ul.adjust li")[0].get_attribute("data-set"))
            wait_for(lambda first=first: all("adjust" in by_css(browser, f'g.node[data-node="{v}"]')[0]
                                             .get_attribute("class") for v in first), what="the highlighted set")
            assert by_css(browser, "#cq-estimand")[0].text.endswith(str(m.dag.identify(y, x)))
            rows = by_css(browser, "#cq-effect tr")
            assert len(rows) == 1 + len(m.states(x))
        browser.save_screenshot(str(shots / f"04-adjust-{name}.png"))
    finally:
        page.stop()


def test_m_bias_graph_shows_the_empty_set_and_an_open_path(browser, shots):
    from selenium.webdriver.support.ui import Select

    g = gallery.graph("m-bias")
    page = open_page(browser, g)
    try:
        assert not by_css(browser, "g.cn-row")                     # a graph: no posteriors
        assert not by_css(browser, "#query-box")[0].is_displayed()
        assert ask_adjust(browser, "X", "Y") == {frozenset()}
        assert by_css(browser, "#cq-result ul.adjust li")[0].text == "∅ (the empty set)"
        assert g.minimal_adjustment_sets("X", "Y") == [frozenset()]
        assert not g.is_backdoor_adjustment("X", "Y", {"M"})       # adjusting for M opens X <- U1 -> M <- U2 -> Y
        browser.save_screenshot(str(shots / "05-m-bias-adjust.png"))

        Select(by_css(browser, "#ds-x")[0]).select_by_value("U1")
        Select(by_css(browser, "#ds-y")[0]).select_by_value("U2")
        Select(by_css(browser, "#ds-given")[0]).select_by_value("M")
        by_css(browser, "#ds-ask")[0].click()
        verdict = wait_for(lambda: by_css(browser, "#ds-verdict")[0].text, what="the d-separation verdict")
        assert verdict == "U1 ⊥ U2 | M: no, d-connected" and not g.d_separated("U1", "U2", {"M"})
        on_path = [n.get_attribute("data-node") for n in by_css(browser, "g.node.on-path")]
        assert set(on_path) == {"U1", "M", "U2"} and is_open_path(g, ["U1", "M", "U2"], {"M"})
        assert len(by_css(browser, "g.edge.on-path")) == 2
        browser.save_screenshot(str(shots / "06-m-bias-dsep.png"))

        Select(by_css(browser, "#ds-given")[0]).deselect_all()
        by_css(browser, "#ds-ask")[0].click()
        wait_for(lambda: by_css(browser, "#ds-verdict")[0].text == "U1 ⊥ U2: yes, d-separated", what="the verdict")
        assert not by_css(browser, "g.node.on-path")
    finally:
        page.stop()


def test_bad_requests_show_the_error_text(browser, shots):
    m = gallery.load("sprinkler")
    page = open_page(browser, m)
    try:
        choose(browser, "Rain", "menu-observe", "no", "P(· | Rain=no)")
        choose(browser, "Sprinkler", "menu-observe", "off", "P(· | Rain=no, Sprinkler=off)")
        click_menu(browser, "Wet", "menu-observe", "wet")                # impossible: wet without rain or sprinkler
        error = wait_for(lambda: by_css(browser, "#error")[0].text, what="the error box")
        assert error.startswith("EvidenceError: ") and "probability zero" in error and "Traceback" not in error
        assert query_text(browser) == "P(· | Rain=no, Sprinkler=off)"    # the page keeps the last good state
        browser.save_screenshot(str(shots / "07-error.png"))
        browser.execute_script("cnExplorer.post('query', {evidence: {Nope: 'x'}}).catch(() => {})")
        wait_for(lambda: "unknown evidence node 'Nope'" in by_css(browser, "#error")[0].text, what="the error text")
        click_menu(browser, "Wet", "menu-clear")
        wait_for(lambda: not by_css(browser, "#error")[0].is_displayed(), what="the error box to clear")
    finally:
        page.stop()


def test_counterfactual_mode_shows_counterfactual_beside_factual(browser, shots):
    m = gallery.load("sprinkler")
    page = open_page(browser, m)
    try:
        by_css(browser, "#cf-mode")[0].click()
        choose(browser, "Sprinkler", "menu-observe", "on", "P(· | Sprinkler=on)")
        choose(browser, "Wet", "menu-observe", "wet", "P(· | Sprinkler=on, Wet=wet)")
        choose(browser, "Sprinkler", "menu-do", "off", "P(·_{Sprinkler=off} | Sprinkler=on, Wet=wet)")
        ev, do = {"Sprinkler": "on", "Wet": "wet"}, {"Sprinkler": "off"}
        assert_bars(browser, "Wet", m.counterfactual("Wet", evidence=ev, do=do), m.states("Wet"))
        assert_bars(browser, "Rain", m.counterfactual("Rain", evidence=ev, do=do), m.states("Rain"))
        factual = m.query("Rain", evidence=ev).probs
        marks = by_css(browser, 'g.cn-row[data-node="Rain"] rect.cn-factual')
        assert [float(r.get_attribute("width")) for r in marks] == pytest.approx(56.0 * factual, abs=1e-6)
        assert "Wet" in by_css(browser, "#cf-result")[0].text
        browser.save_screenshot(str(shots / "08-counterfactual.png"))
    finally:
        page.stop()


def test_zoom_and_pan(browser):
    from selenium.webdriver.common.action_chains import ActionChains

    page = open_page(browser, gallery.load("asia"))
    try:
        def view():
            box = browser.execute_script("return document.querySelector('#diagram svg').getAttribute('viewBox')")
            return [float(v) for v in box.split()]

        start = view()
        by_css(browser, "#zoom-in")[0].click()
        zoomed = view()
        assert zoomed[2] == pytest.approx(start[2] / 1.3, rel=1e-6)
        pane = by_css(browser, "#diagram")[0]
        ActionChains(browser).move_to_element_with_offset(pane, 5, 5).click_and_hold().move_by_offset(60, 40) \
            .release().perform()
        panned = view()
        assert panned[0] < zoomed[0] and panned[1] < zoomed[1] and panned[2] == pytest.approx(zoomed[2])
        by_css(browser, "#zoom-fit")[0].click()
        assert view() == pytest.approx(start)
    finally:
        page.stop()


def test_continuous_nodes_show_mean_and_sd(browser, shots):
    m = gallery.load("linear-gaussian")
    page = open_page(browser, m)
    try:
        by_css(browser, 'g.node[data-node="Income"]')[0].click()
        wait_for(lambda: by_css(browser, "#node-menu")[0].is_displayed(), what="the menu of Income")
        by_css(browser, "#node-menu input.menu-observe-value")[0].send_keys("40")
        by_css(browser, "#node-menu button.menu-observe")[0].click()
        wait_for(lambda: query_text(browser) == "P(· | Income=40)", what="the query text")
        want = m.query("Education", evidence={"Income": 40.0})
        text = by_css(browser, 'g.cn-row[data-node="Education"] text.cn-value')[0].text
        mean, sd = (float(t) for t in text.split("±"))
        assert mean == pytest.approx(float(np.ravel(want.mean)[0]), rel=1e-4)     # shown to 5 significant digits
        assert sd == pytest.approx(float(np.ravel(want.std)[0]), rel=1e-2)
        browser.save_screenshot(str(shots / "09-linear-gaussian.png"))
    finally:
        page.stop()


def test_slow_requests_show_progress(browser):
    m = gallery.load("sprinkler")
    page = cn.explore(m, browser=False)
    try:
        browser.get(page.url)
        wait_for(lambda: browser.execute_script("return document.body.dataset.ready") == "1", what="the page")
        answer = page.session.answer

        def slow(name, payload=None):
            import time

            time.sleep(1.5)
            return answer(name, payload)

        page.session.answer = slow
        click_menu(browser, "Rain", "menu-observe", "yes")
        wait_for(lambda: "computing" in by_css(browser, "#status")[0].text, what="the progress text")
        assert "busy" in by_css(browser, "#status")[0].get_attribute("class")
        wait_for(lambda: query_text(browser) == "P(· | Rain=yes)", what="the slow answer")
        assert "busy" not in by_css(browser, "#status")[0].get_attribute("class")
    finally:
        page.stop()
