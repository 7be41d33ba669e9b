"""`toolshift view RUNS`: a local trajectory viewer, plain HTML and JS over a small JSON API that pages.

The server is the standard library's threading HTTP server. It holds only the episode index
(`toolshift.report.episode_index`); a page of the episode list comes from the index, and opening an
episode reads its one line. It binds to loopback unless told otherwise, and a non-loopback address
needs an explicit `allow_remote`. Bound to loopback, it answers only requests whose Host names loopback
(421 otherwise, against DNS rebinding: the rule of the gateway and the world server,
`toolshift.world.mcp.http_guard.host_allowed`). It serves GET only: the static page and

    GET /api/runs                       files, their kinds and problems, totals, the flow if any
    GET /api/episodes?offset&limit&…    a page of rows, the total, and facet counts (filters: domain,
                                        agent, model, version, outcome, strict, task, file; q = text in
                                        the id, task or messages; sort = a column, desc = 1 descending)
    GET /api/aggregate?…                SR, strict SR, pass^k with intervals for the same filters
    GET /api/episode?row=N              one episode in full, its index row, its verdict (strict
                                        success, the collateral and the missing rows), the grader
                                        breakdown, its task (from a build among the inputs), its file's
                                        run configuration (the store header's meta), the flow's marks
    GET /api/poll                       the inputs' generation: it grows when a run folder changed (a
                                        run still writing), and the page then reloads its list

Polling rescans only file sizes and modification times; a change re-opens the inputs (a grown file is
indexed afresh, an unchanged one comes from the index cache) and swaps them in whole.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

from toolshift.errors import BadInputError, ToolshiftError
from toolshift.report.inputs import Inputs, discover
from toolshift.report.view.aggregate import aggregate
from toolshift.report.view.grader import TaskBook, grader, task_panel
from toolshift.report.view.marks import FlowMarker
from toolshift.report.view.query import facets, search_mask, sort_rows
from toolshift.report.view.raw import tau2_raw

STATIC = Path(__file__).parent / "static"
PAGES = {
    "/": "index.html",
    "/index.html": "index.html",
    "/viewer.js": "viewer.js",
    "/episode.js": "episode.js",
    "/viewer.css": "viewer.css",
}
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
FILTERS = {"domain": "domain", "agent": "agent", "model": "model", "version": "version", "outcome": "outcome",
           "strict": "strict", "task": "task_id", "file": "file", "run": "run", "condition": "condition",
           "harness": "harness", "kind": "kind"}  # fmt: skip
MAX_LIMIT = 500
SOCKET_TIMEOUT = 30.0
"""Seconds the viewer waits on a silent client socket (reading its request or sending it an answer)."""


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and names that resolve only to them (localhost)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def check_bind(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless explicitly allowed: episodes hold whatever the agents saw."""
    if not is_loopback(host) and not allow_remote:
        raise BadInputError(
            f"{host} is not a loopback address: the viewer serves every episode to whoever can reach it; "
            "pass --allow-remote to bind it anyway",
            field="host",
        )


def signature(paths: list[Path]) -> tuple[tuple[str, int, int], ...]:
    """Every file under `paths` (hidden entries skipped) with its size and modification time."""
    out: list[tuple[str, int, int]] = []
    for root in paths:
        todo = [root]
        while todo:
            p = todo.pop()
            try:
                st = p.stat()
            except OSError:
                continue
            if p.is_dir():
                try:
                    todo += [c for c in p.iterdir() if not c.name.startswith(".")]
                except OSError:
                    continue
            else:
                out.append((str(p), st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


@dataclass
class Viewer:
    """What the API answers from: the inputs, their joined index and the flow marker, if any.

    With `paths` (what the inputs were discovered from), `refresh` re-opens them when a file under them
    changed: a run folder that grows is picked up while the viewer serves."""

    inputs: Inputs
    marker: FlowMarker | None = None
    paths: list[Path] | None = None

    def __post_init__(self) -> None:
        self.runs = self.inputs.runset()
        self.generation = 0
        self._lock = threading.Lock()
        self._seen = signature(self.paths) if self.paths else ()
        self.book = TaskBook([f.path for f in self.inputs.of("bench-build")])
        self.book.warm()

    def refresh(self) -> dict[str, Any]:
        """Re-open the inputs if a file under `paths` changed since the last look; the generation counts changes."""
        if self.paths and self._lock.acquire(blocking=False):  # a look already under way answers for this one
            try:
                now = signature(self.paths)
                if now != self._seen:
                    try:
                        inputs = discover(self.paths, cache=self.inputs.cache)
                    except ToolshiftError as exc:  # a folder removed meanwhile: keep what is shown
                        return {"generation": self.generation, "episodes": self.runs.size, "live": True,
                                "error": str(exc)}  # fmt: skip
                    self.inputs, self.runs, self._seen = inputs, inputs.runset(), now
                    self.generation += 1
                    builds = [f.path for f in inputs.of("bench-build")]
                    if builds != self.book.builds:
                        self.book = TaskBook(builds)
                        self.book.warm()
            finally:
                self._lock.release()
        return {"generation": self.generation, "episodes": self.runs.size, "live": bool(self.paths)}

    def selection(self, query: dict[str, str]) -> tuple[Any, dict[str, str], str, np.ndarray]:
        """(run set, filters, search text, matching rows) for a query, from one snapshot of the run set."""
        runs = self.runs  # one snapshot for the whole answer: a refresh swaps it whole
        filters = {FILTERS[k]: v for k, v in query.items() if k in FILTERS and v != "*"}
        text = query.get("q", "").strip()
        return runs, filters, text, np.nonzero(search_mask(runs, filters, text))[0]

    def runs_info(self) -> dict[str, Any]:
        files = []
        for f in self.inputs.files:
            files.append({
                "path": str(f.path),
                "kind": f.kind,
                "episodes": f.index.episodes if f.index is not None and not f.error else None,
                "ok": f.ok,
                "problems": f.problems(),
            })  # fmt: skip
        problems = [p for f in self.inputs.bad for p in f.problems()]
        return {
            "files": files,
            "episodes": self.runs.size,
            "bad_files": [str(f.path) for f in self.inputs.bad if not f.ok],
            "problems": problems,
            "flow": self.marker.describe() if self.marker else None,
            "builds": [str(b) for b in self.book.builds],
            "generation": self.generation,
            "live": bool(self.paths),
        }

    def page(self, query: dict[str, str]) -> dict[str, Any]:
        try:
            offset = max(0, int(query.get("offset", "0")))
            limit = min(MAX_LIMIT, max(1, int(query.get("limit", "50"))))
        except ValueError as exc:
            raise BadInputError("offset and limit are integers", field="offset") from exc
        runs, filters, text, rows = self.selection(query)
        if query.get("sort"):
            rows = sort_rows(runs, rows, query["sort"], descending=query.get("desc") == "1")
        shown = rows[offset : offset + limit]
        return {
            "total": int(rows.size),
            "offset": offset,
            "limit": limit,
            "generation": self.generation,
            "rows": [runs.summary(int(r)) for r in shown],
            "facets": facets(runs, filters, text),
        }

    def aggregate(self, query: dict[str, str]) -> dict[str, Any]:
        runs, _, _, rows = self.selection(query)
        return aggregate(runs, rows)

    def episode(self, query: dict[str, str]) -> dict[str, Any]:
        try:
            row = int(query.get("row", ""))
            runs = self.runs
            index, local = runs.locate(row)
        except (ValueError, IndexError) as exc:
            raise BadInputError(f"no episode row {query.get('row')!r}", field="row") from exc
        out: dict[str, Any] = {"summary": runs.summary(row)}
        try:
            episode = index.episode(local)
        except BadInputError as exc:
            out["error"] = str(exc)
            return out
        out["episode"] = episode.model_dump(mode="json", exclude_none=True)
        out["verdict"] = verdict_of(episode)
        if any(f.kind == "tau2-results" and f.index is index for f in self.inputs.files):
            out["raw"] = {
                str(k): v for k, v in tau2_raw(index.source, episode.id, len(episode.messages)).items()
            }
        out["run"] = dict(index.meta)
        out["grader"] = grader(episode, self.book)
        out["task"] = task_panel(episode, self.book)
        from toolshift.loop.marks import loop_marks

        loop = loop_marks(episode)  # what the loop changed: a supplied plan or tools, served lookups
        if loop is not None:
            out["loop_marks"] = loop
        if self.marker is not None:
            try:
                out["marks"] = self.marker.marks(episode)
            except BadInputError as exc:
                out["marks"] = {"available": False, "reason": str(exc)}
        return out


def _rows(value: Any) -> list[str] | None:
    return [str(v) for v in value] if isinstance(value, list) else None


def verdict_of(episode: Any) -> dict[str, Any]:
    """What the episode's judge recorded, for the grader panel: success and strict success, the collateral
    changes and their rows, the missing gold changes and their rows (rows as `table/key`; None: not recorded,
    as in episodes from before the strict verdict)."""
    outcome = episode.outcome
    info = outcome.info if outcome is not None else {}
    strict = info.get("strict_success")
    return {
        "success": outcome.success if outcome is not None else None,
        "strict_success": strict if isinstance(strict, bool) else None,
        "collateral_changes": info.get("collateral_changes"),
        "collateral_rows": _rows(info.get("collateral_rows")),
        "missing_changes": info.get("missing_changes"),
        "missing_rows": _rows(info.get("missing_rows")),
    }


class _Handler(BaseHTTPRequestHandler):
    viewer: Viewer
    server_version = "toolshift-view"
    timeout = SOCKET_TIMEOUT
    """Seconds a connection may sit without sending its request (or taking its answer) before it is closed:
    an idle socket does not hold its thread for ever (D303)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        body = json.dumps(
            value, ensure_ascii=False, allow_nan=False
        ).encode()  # strict JSON: a browser's parser
        self._send(status, body, "application/json; charset=utf-8")

    def do_GET(self) -> None:
        from toolshift.world.mcp.http_guard import host_allowed, misdirected

        host = self.headers.get("Host")
        if not host_allowed(host, str(self.server.server_address[0])):
            self._json(HTTPStatus.MISDIRECTED_REQUEST, {"error": misdirected(host)})
            return
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        if url.path in PAGES:
            static = STATIC / PAGES[url.path]
            self._send(HTTPStatus.OK, static.read_bytes(), TYPES[static.suffix])
            return
        api = {"/api/runs": self.viewer.runs_info, "/api/episodes": lambda: self.viewer.page(query),
               "/api/aggregate": lambda: self.viewer.aggregate(query),
               "/api/episode": lambda: self.viewer.episode(query), "/api/poll": self.viewer.refresh}  # fmt: skip
        answer = api.get(url.path)
        if answer is None:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {url.path}"})
            return
        try:
            self._json(HTTPStatus.OK, answer())
        except BadInputError as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})


class _Server(ThreadingHTTPServer):
    """The viewer's server: a client that goes away (a closed tab, a cancelled fetch: `BrokenPipeError`,
    `ConnectionResetError`) or sends nothing in time is the client's business, never a traceback (D303)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


def make_server(
    viewer: Viewer, host: str = "127.0.0.1", port: int = 8800, *, timeout: float = SOCKET_TIMEOUT
) -> ThreadingHTTPServer:
    handler = type("Handler", (_Handler,), {"viewer": viewer, "timeout": timeout})
    try:
        server = _Server((host, port), handler)
    except OSError as exc:
        raise BadInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", field="port") from exc
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in str(host) else host
    return f"http://{shown}:{port}/"


@contextmanager
def serving(
    viewer: Viewer, host: str = "127.0.0.1", port: int = 0, *, timeout: float = SOCKET_TIMEOUT
) -> Iterator[str]:
    """Serve in a background thread for the duration of the block; yields the URL (tests, benchmarks)."""
    server = make_server(viewer, host, port, timeout=timeout)
    thread = threading.Thread(target=server.serve_forever, name="toolshift-view", daemon=True)
    thread.start()
    try:
        yield url_of(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
