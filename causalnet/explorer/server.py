"""The explorer's server: the standard library's HTTP server on the loopback address.

:func:`explore` starts an :class:`Explorer`: a ``ThreadingHTTPServer`` bound to
``127.0.0.1`` (a free port unless one is given) in a daemon thread, serving

* ``GET /`` and ``GET /static/<file>``: the page, from the package's own
  ``static`` folder (a fixed list of files; nothing else on disk is served);
* ``GET /api/model`` and ``GET /api/diagram`` (the SVG of :mod:`~causalnet.explorer.layout`);
* ``POST /api/query``, ``/api/counterfactual``, ``/api/adjust``, ``/api/dsep``: a
  JSON object in, a JSON object out (:class:`~causalnet.explorer.session.Session`).

Nothing from the page is executed: request bodies are parsed as JSON and only
read as node names and values. Every computation runs on one worker thread (the
model's caches see one request at a time) and the server waits for it at most
the session's timeout plus :data:`GRACE` seconds. Errors are JSON
``{"error": message, "type": class name}``: a library error (bad node, state,
body) is a 400, a request too large or too slow (``ResourceError``) a 503, an
unknown path a 404, and a bug a 500 with one line, never a traceback. Requests
whose ``Host`` is not the loopback address, and cross-origin posts, are refused
(403), so another web page cannot drive the server.

The standard library's server is enough here: one user, a handful of JSON
routes, static files; it needs no dependency and works offline.
"""

from __future__ import annotations

import concurrent.futures
import html
import importlib.resources
import json
import sys
import threading
from typing import Any

from ..errors import CausalNetError, RenderError, ResourceError
from .layout import GEOMETRY, diagram_svg
from .session import Session

__all__ = ["Explorer", "explore", "STATIC_FILES", "GRACE", "MAX_BODY"]

#: The files the server serves, from the package's ``static`` folder.
STATIC_FILES = {"index.html": "text/html; charset=utf-8", "explorer.css": "text/css; charset=utf-8",
                "explorer.js": "text/javascript; charset=utf-8"}
#: Seconds the server waits beyond the session's timeout before answering 503.
GRACE = 5.0
#: Largest request body accepted, in bytes.
MAX_BODY = 1 << 20
_POSTS = ("query", "counterfactual", "adjust", "dsep")
_HOST = "127.0.0.1"


def _static(name: str) -> bytes:
    return (importlib.resources.files(__package__) / "static" / name).read_bytes()


def _error(e: BaseException) -> tuple[int, dict]:
    """HTTP status and JSON body of an exception raised while answering."""
    text = " | ".join(p.strip() for p in (str(e) or type(e).__name__).splitlines() if p.strip())
    if isinstance(e, ResourceError):
        return 503, {"error": text, "type": type(e).__name__}
    if isinstance(e, CausalNetError):
        return 400, {"error": text, "type": type(e).__name__}
    return 500, {"error": f"internal error: {type(e).__name__}: {text} (a bug in causalnet)", "type": "InternalError"}


class _BadRequest(CausalNetError):
    """A request the server refuses before any question is asked (bad body, path or origin)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _handler_class(app: Explorer):
    import http.server  # the standard library's server, loaded when a page is served

    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "causalnet-explorer"
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # noqa: A002 - the library prints nothing
            return

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                                                        "img-src 'self' data:; frame-ancestors *")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, status: int, obj: Any) -> None:
            self._send(status, json.dumps(obj, ensure_ascii=False).encode("utf-8"), "application/json")

        def _check_host(self) -> None:
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
            if host not in (_HOST, "localhost"):
                raise _BadRequest(403, f"the explorer answers on {_HOST} only, not on host {host!r}")
            origin = self.headers.get("Origin")
            if self.command == "POST" and origin and origin.rstrip("/") not in app.origins:
                raise _BadRequest(403, f"cross-origin request from {origin!r} refused")

        def _guard(self, fn) -> None:
            try:
                self._check_host()
                fn()
            except _BadRequest as e:
                self.close_connection = True          # a refused body may be left unread
                self._json(e.status, {"error": str(e), "type": "BadRequest"})
            except Exception as e:  # noqa: BLE001 - one JSON line per failure, never a traceback
                self._json(*_error(e))

        def do_GET(self) -> None:  # noqa: N802 - http.server's hook
            self._guard(self._get)

        def do_HEAD(self) -> None:  # noqa: N802
            self._guard(self._get)

        def do_POST(self) -> None:  # noqa: N802
            self._guard(self._post)

        def _get(self) -> None:
            path = self.path.split("?", 1)[0]
            name = "index.html" if path in ("/", "/index.html") else path[len("/static/"):] \
                if path.startswith("/static/") else None
            if name is not None:
                if name not in STATIC_FILES:
                    raise _BadRequest(404, f"no such file {path!r}")
                self._send(200, _static(name), STATIC_FILES[name])
            elif path == "/api/model":
                self._json(200, {**app.call("model"), "geometry": GEOMETRY})
            elif path == "/api/diagram":
                svg = app.diagram()
                self._send(200, svg.encode("utf-8"), "image/svg+xml; charset=utf-8")
            else:
                raise _BadRequest(404, f"no such page {path!r}")

        def _post(self) -> None:
            path = self.path.split("?", 1)[0]
            name = path[len("/api/"):] if path.startswith("/api/") else None
            if name not in _POSTS:
                raise _BadRequest(404, f"no such request {path!r}; requests: {['/api/' + p for p in _POSTS]}")
            try:
                size = int(self.headers.get("Content-Length") or "0")
            except ValueError:
                raise _BadRequest(400, "Content-Length is not a number") from None
            if not 0 < size <= MAX_BODY:
                raise _BadRequest(400 if size <= 0 else 413, f"the request body must hold 1 to {MAX_BODY} bytes "
                                                             f"of JSON, got {size}")
            raw = self.rfile.read(size)
            try:
                payload = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise _BadRequest(400, f"the request body is not JSON: {e}") from None
            self._json(200, app.call(name, payload))

    return Handler


class Explorer:
    """A running explorer page for one model or graph.

    Parameters
    ----------
    obj : CausalModel or DAG
    port : int, optional
        The port on 127.0.0.1; a free one when None or 0.
    timeout : float, default 10.0
        Seconds one request may compute (see :class:`~causalnet.explorer.session.Session`).
    title : str, optional
    renderer : {"auto", "dot", "graphviz-pure"}
        The program that lays the diagram out (see :func:`causalnet.render`).

    Attributes
    ----------
    url : str
        ``http://127.0.0.1:<port>/``.
    session : Session

    Raises
    ------
    ModelError
        If `obj` is neither a model nor a DAG.
    OSError
        If the port is taken.
    """

    def __init__(self, obj: Any, *, port: int | None = None, timeout: float = 10.0, title: str | None = None,
                 renderer: str = "auto") -> None:
        from http.server import ThreadingHTTPServer  # the standard library's server, loaded when a page is served

        if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < 65536):
            raise CausalNetError(f"port must be an int in [0, 65535], got {port!r}")
        self.session = Session(obj, timeout=timeout, title=title)
        self._obj, self._renderer = obj, renderer
        self._svg: str | None = None
        self._lock = threading.Lock()
        self._worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="causalnet-explorer")
        self._server = ThreadingHTTPServer((_HOST, port or 0), _handler_class(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://{_HOST}:{self.port}/"
        self.origins = {f"http://{_HOST}:{self.port}", f"http://localhost:{self.port}"}
        self._thread = threading.Thread(target=self._server.serve_forever, name="causalnet-explorer-http",
                                        daemon=True)
        self._thread.start()
        self._stopped = False

    def call(self, name: str, payload: Any = None) -> dict:
        """Answer one API request on the worker thread, waiting at most the timeout plus :data:`GRACE`."""
        future = self._worker.submit(self.session.answer, name, payload)
        try:
            return future.result(timeout=self.session.timeout + GRACE)
        except concurrent.futures.TimeoutError:
            raise ResourceError(f"the request did not finish within {self.session.timeout + GRACE:g} s; the server "
                                f"is still working on it (later requests wait for it); try a smaller question "
                                f"or a smaller model") from None

    def diagram(self) -> str:
        """The diagram's SVG, rendered on first use (RenderError when no renderer is installed)."""
        with self._lock:
            if self._svg is None:
                self._svg = diagram_svg(self._obj, renderer=self._renderer)
            return self._svg

    def stop(self) -> None:
        """Stop serving and free the port (safe to call twice)."""
        if self._stopped:
            return
        self._stopped = True
        self._server.shutdown()
        self._server.server_close()
        self._worker.shutdown(wait=False, cancel_futures=True)

    def wait(self) -> None:
        """Block until the server stops (Ctrl-C stops it)."""
        try:
            while self._thread.is_alive():
                self._thread.join(0.5)
        except KeyboardInterrupt:
            self.stop()

    def __enter__(self) -> Explorer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else "serving"
        return f"Explorer({self.session.title!r}, {state} at {self.url})"

    def _repr_html_(self) -> str:
        """The page inline in Jupyter (an iframe on the running server)."""
        return (f'<iframe src="{html.escape(self.url)}" width="100%" height="720" '
                f'style="border:1px solid #ccc" title="causalnet explorer"></iframe>')


def _in_notebook() -> bool:
    return "ipykernel" in sys.modules


def explore(obj: Any, *, port: int | None = None, browser: bool | None = None, timeout: float = 10.0,
            title: str | None = None, renderer: str = "auto") -> Explorer:
    """Start the explorer page for a model or a graph; returns the running :class:`Explorer`.

    Parameters
    ----------
    obj : CausalModel or DAG
        A DAG (or a gallery graph) offers the graph questions only.
    port : int, optional
        A free port on 127.0.0.1 when None.
    browser : bool, optional
        Open the page in a web browser. None (default): open it, except inside
        Jupyter, where the returned handle shows the page inline.
    timeout : float, default 10.0
        Seconds one request may compute.
    title, renderer
        As in :class:`Explorer`.

    Returns
    -------
    Explorer
        ``.url``; ``.stop()`` ends it.

    Examples
    --------
    >>> import causalnet as cn
    >>> with cn.explore(cn.gallery.load("sprinkler"), browser=False) as page:
    ...     page.url.startswith("http://127.0.0.1:")
    True
    """
    page = Explorer(obj, port=port, timeout=timeout, title=title, renderer=renderer)
    if browser or (browser is None and not _in_notebook()):
        try:
            page.diagram()                       # render before the browser asks; a RenderError shows on the page
        except RenderError:
            pass
        import webbrowser  # the standard library's, loaded only to open a page

        webbrowser.open(page.url)
    return page
