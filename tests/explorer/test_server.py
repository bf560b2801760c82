"""The explorer's HTTP server without a browser: routes, status codes, typed JSON errors, the loopback guard."""

import http.client
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from xml.etree import ElementTree

import pytest
from browser_support import needs_renderer

import causalnet as cn
from causalnet import gallery
from causalnet.cli.app import build_parser
from causalnet.cli.explore import load_explorable
from causalnet.explorer import Explorer, server
from causalnet.explorer import session as session_module


@pytest.fixture(scope="module")
def page():
    with cn.explore(gallery.load("sprinkler"), browser=False) as p:
        yield p


def call(page, path, payload=None, *, raw=None, headers=None):
    """(status, decoded body) of one request."""
    data = raw if raw is not None else (None if payload is None else json.dumps(payload).encode())
    req = urllib.request.Request(page.url.rstrip("/") + path, data=data, method="POST" if data is not None else "GET",
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            body, status, ctype = r.read(), r.status, r.headers["Content-Type"]
    except urllib.error.HTTPError as e:
        body, status, ctype = e.read(), e.code, e.headers["Content-Type"]
    return status, json.loads(body) if ctype.startswith("application/json") else body.decode()


@needs_renderer
def test_static_files_and_model(page):
    assert page.url.startswith("http://127.0.0.1:")
    status, body = call(page, "/")
    assert status == 200 and "/static/explorer.js" in body and "http" not in body.replace("http-equiv", "")
    for name in ("explorer.js", "explorer.css"):
        assert call(page, f"/static/{name}")[0] == 200
    status, info = call(page, "/api/model")
    assert status == 200 and [n["name"] for n in info["nodes"]] == ["Rain", "Sprinkler", "Wet"]
    assert info["geometry"]["max_rows"] >= 2
    status, svg = call(page, "/api/diagram")
    ids = {e.get("id") for e in ElementTree.fromstring(svg.encode()).iter()}
    assert status == 200 and {"cn-n-0", "cn-n-1", "cn-n-2", "cn-e-0-1", "cn-e-0-2", "cn-e-1-2"} <= ids


def test_query_over_http_equals_the_model(page):
    m = gallery.load("sprinkler")
    status, out = call(page, "/api/query", {"evidence": {"Rain": "yes"}, "do": {"Sprinkler": "on"}})
    assert status == 200 and out["query"] == "P(· | do(Sprinkler=on), Rain=yes)"
    want = m.query("Wet", evidence={"Rain": "yes"}, do={"Sprinkler": "on"}).probs
    assert [out["posteriors"]["Wet"][s] for s in ("dry", "wet")] == pytest.approx(want, abs=1e-12)
    for path, payload in [("/api/counterfactual", {"evidence": {"Wet": "wet"}, "do": {"Sprinkler": "off"}}),
                          ("/api/adjust", {"treatment": "Sprinkler", "outcome": "Wet"}),
                          ("/api/dsep", {"x": "Sprinkler", "y": "Rain", "given": ["Wet"]})]:
        status, out = call(page, path, payload)
        assert status == 200, out
    assert out["path"] == ["Sprinkler", "Rain"]


@pytest.mark.parametrize("path, payload, raw, status, kind, match", [
    ("/api/query", {"evidence": {"Rian": "yes"}}, None, 400, "EvidenceError", "did you mean 'Rain'"),
    ("/api/query", None, b"{not json", 400, "BadRequest", "not JSON"),
    ("/api/query", None, b"\xff\xfe", 400, "BadRequest", "not JSON"),
    ("/api/adjust", {"treatment": "Rain"}, None, 400, "GraphError", "outcome must be a node name"),
    ("/api/eval", {"code": "1+1"}, None, 404, "BadRequest", "no such request"),
    ("/api/model/../../etc/passwd", None, None, 404, "BadRequest", "no such page"),
    ("/static/session.py", None, None, 404, "BadRequest", "no such file"),
])
def test_bad_requests_get_typed_json_errors_never_a_traceback(page, path, payload, raw, status, kind, match):
    got, body = call(page, path, payload, raw=raw)
    assert got == status and body["type"] == kind and match in body["error"]
    assert "Traceback" not in body["error"]


def test_body_size_host_and_origin_are_checked(page):
    conn = http.client.HTTPConnection("127.0.0.1", page.port, timeout=30)
    conn.request("POST", "/api/query", body=b"{}", headers={"Content-Length": str(server.MAX_BODY + 1)})
    r = conn.getresponse()
    assert r.status == 413 and "bytes" in json.loads(r.read())["error"]
    conn.close()
    conn.request("GET", "/api/model", headers={"Host": "evil.example:80"})
    r = conn.getresponse()
    assert r.status == 403 and "127.0.0.1 only" in json.loads(r.read())["error"]
    status, body = call(page, "/api/query", {}, headers={"Origin": "http://evil.example"})
    assert status == 403 and "cross-origin" in body["error"]
    assert call(page, "/api/query", {}, headers={"Origin": page.url.rstrip("/")})[0] == 200
    conn.close()


def test_slow_requests_answer_503_and_the_server_keeps_serving(monkeypatch):
    with Explorer(gallery.load("sprinkler"), timeout=0.2) as page:
        monkeypatch.setattr(server, "GRACE", 0.0)
        answer = page.session.answer

        def slow(name, payload=None):
            time.sleep(1.0)
            return answer(name, payload)

        monkeypatch.setattr(page.session, "answer", slow)
        status, body = call(page, "/api/query", {})
        assert status == 503 and body["type"] == "ResourceError" and "did not finish" in body["error"]
        monkeypatch.setattr(page.session, "answer", answer)
        time.sleep(1.0)
        assert call(page, "/api/query", {})[0] == 200


def test_resource_errors_are_503(monkeypatch):
    monkeypatch.setattr(session_module, "JT_MAX_CLIQUE", 0)            # the per-node loop checks the clock
    with Explorer(gallery.load("alarm"), timeout=1e-9) as page:
        status, body = call(page, "/api/query", {})
    assert status == 503 and body["type"] == "ResourceError" and "took longer than" in body["error"]


def test_handle_stop_repr_and_jupyter():
    page = cn.explore(gallery.graph("m-bias"), browser=False, port=0)
    assert f'src="{page.url}"' in page._repr_html_() and "<iframe" in page._repr_html_()
    assert "serving" in repr(page)
    status, info = call(page, "/api/model")
    assert status == 200 and not info["has_mechanisms"]
    page.stop()
    page.stop()
    assert "stopped" in repr(page)
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(page.url + "api/model", timeout=5)
    with pytest.raises(cn.CausalNetError, match="port"):
        Explorer(gallery.graph("m-bias"), port=-1)


def test_cli_sources_and_command(tmp_path):
    assert isinstance(load_explorable("gallery:frontdoor"), cn.DAG)
    assert isinstance(load_explorable("gallery:sprinkler"), cn.CausalModel)
    assert load_explorable("A -> B <- C").parents("B") == ("A", "C")
    path = tmp_path / "asia.bif"
    cn.write_bif(gallery.load("asia"), path)
    assert isinstance(load_explorable(str(path)), cn.CausalModel)
    args = build_parser().parse_args(["explore", "gallery:asia", "--port", "0", "--no-browser"])
    assert args.no_browser and args.port == 0
    proc = subprocess.Popen([sys.executable, "-m", "causalnet", "explore", "gallery:sprinkler", "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = line.split(" at ")[1].split()[0]
        with urllib.request.urlopen(url + "api/model", timeout=30) as r:
            assert json.loads(r.read())["title"] == "gallery:sprinkler"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_cli_bad_model_is_one_line():
    proc = subprocess.run([sys.executable, "-m", "causalnet", "explore", "gallery:nope", "--no-browser"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("causalnet: error:") and "Traceback" not in proc.stderr
