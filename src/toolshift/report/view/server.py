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
    GET /api/episode?id=ID[&file=F]     one episode in full (by its id, and its file where the id is not
                                        unique; `row=N` also), its index row, its verdict (strict
                                        success, the collateral and the missing rows), the grader
                                        breakdown, its task (from a build among the inputs, else as the
                                        episode records it), its file's run configuration (the store
                                        header's meta), the flow's marks, its notes and its task's
    GET /api/fields                     what a filter expression may name, and each field's values
    GET /api/table.csv?… /api/table.json?…   the filtered set's rows, as a file to download
    GET /api/poll                       the inputs' generation: it grows when a run folder changed (a
                                        run still writing), and the page then reloads its list
    POST /api/notes                     add (`{file, on, episode?, task, domain, text}`) or delete
                                        (`{file, delete: ID}`) a note, kept beside the episode's file

Every list query also takes `expr`, a filter expression (`toolshift.report.view.expr`). A POST must carry
`Content-Type: application/json` and the header `X-Toolshift-View: 1` (which a page of another origin
cannot send without a preflight this server never answers) and, where the browser sends one, an `Origin`
naming this server.

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
from toolshift.report.view import expr, notes
from toolshift.report.view.aggregate import aggregate
from toolshift.report.view.grader import TaskBook, grader, task_panel
from toolshift.report.view.marks import FlowMarker
from toolshift.report.view.query import facets, search_mask, sort_rows
from toolshift.report.view.raw import tau2_raw
from toolshift.report.view.table import table_csv, table_json

STATIC = Path(__file__).parent / "static"
SCRIPTS = ("expr.js", "episode.js", "compare.js", "viewer.js")
"""The page's scripts, in the order it loads them (the static export inlines them in this order)."""
PAGES = {"/": "index.html", "/index.html": "index.html", "/viewer.css": "viewer.css",
         **{f"/{name}": name for name in SCRIPTS}}  # fmt: skip
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
MAX_BODY = 64 * 1024


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
                try:  # notes written beside a run are not a change of the run
                    todo += [
                        c
                        for c in p.iterdir()
                        if not c.name.startswith(".") and not c.name.endswith(".notes.json")
                    ]
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
        keep = search_mask(runs, filters, text)
        if query.get("expr", "").strip():
            keep &= expr.mask(query["expr"], runs)
        return runs, filters, text, np.nonzero(keep)[0]

    def find(self, query: dict[str, str]) -> int:
        """The row an episode query names: `id` (with `file` where the id is not unique), or `row`."""
        runs = self.runs
        if "id" in query:
            wanted, file = query["id"], query.get("file")
            start = 0
            for f in runs.files:
                if not file or str(f.source) == file:
                    ids = f.ids()
                    if wanted in ids:
                        return start + ids.index(wanted)
                start += f.episodes
            raise BadInputError(f"no episode {wanted!r}" + (f" in {file}" if file else ""), field="id")
        try:
            row = int(query.get("row", ""))
            runs.locate(row)
        except (ValueError, IndexError) as exc:
            raise BadInputError(f"no episode row {query.get('row')!r}", field="row") from exc
        return row

    def fields(self) -> dict[str, Any]:
        return expr.vocabulary(self.runs)

    def table(self, query: dict[str, str], kind: str) -> bytes:
        runs, _, _, rows = self.selection(query)
        if query.get("sort"):
            rows = sort_rows(runs, rows, query["sort"], descending=query.get("desc") == "1")
        return table_csv(runs, rows) if kind == "csv" else table_json(runs, rows)

    def note(self, body: dict[str, Any]) -> dict[str, Any]:
        """Add or delete a note beside one of the inputs' episode files (named by `file`)."""
        sources = {str(f.source): f.source for f in self.runs.files}
        source = sources.get(str(body.get("file")))
        if source is None:
            raise BadInputError("not one of the viewer's episode files", field="file")
        if body.get("delete"):
            return {"deleted": notes.delete_note(source, str(body["delete"]))}
        return {"note": notes.add_note(source, body).model_dump()}

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
        from toolshift.terminal import toolshift_command

        kinds = self.runs.codes["kind"]
        recording = self.runs.lookup["kind"].get("recording")
        return {
            "files": files,
            "episodes": self.runs.size,
            "recordings": int((kinds == recording).sum()) if recording is not None else 0,
            "command": toolshift_command(),
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
        if query.get("focus", "").isdigit():  # the page that holds this row (an episode opened from a link)
            at = np.nonzero(rows == int(query["focus"]))[0]
            if at.size:
                offset = int(at[0]) // limit * limit
        shown = rows[offset : offset + limit]
        return {
            "total": int(rows.size),
            "offset": offset,
            "limit": limit,
            "generation": self.generation,
            "rows": [runs.summary(int(r)) for r in shown],
            "facets": facets(
                runs, filters, text, also=expr.mask(query["expr"], runs) if query.get("expr") else None
            ),
        }

    def aggregate(self, query: dict[str, str]) -> dict[str, Any]:
        runs, _, _, rows = self.selection(query)
        return aggregate(runs, rows)

    def episode(self, query: dict[str, str]) -> dict[str, Any]:
        runs = self.runs
        row = self.find(query)
        index, local = runs.locate(row)
        summary = runs.summary(row)
        same_id = sum(1 for f in runs.files if summary["id"] in f.ids())
        out: dict[str, Any] = {"summary": summary, "unique": same_id == 1}
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
        out["notes"] = notes.notes_for([f.source for f in runs.files], episode=episode.id, task=episode.task_id,
                                       domain=episode.domain, file=index.source)  # fmt: skip
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

    def _send(self, status: int, body: bytes, content_type: str, download: str = "") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if download:
            self.send_header("Content-Disposition", f'attachment; filename="{download}"')
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
        if url.path in ("/api/table.csv", "/api/table.json"):
            kind = url.path.rsplit(".", 1)[1]
            try:
                body = self.viewer.table(query, kind)
            except BadInputError as exc:
                self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
                return
            self._send(HTTPStatus.OK, body, "text/csv; charset=utf-8" if kind == "csv" else "application/json",
                       download=f"episodes.{kind}")  # fmt: skip
            return
        api = {"/api/runs": self.viewer.runs_info, "/api/episodes": lambda: self.viewer.page(query),
               "/api/aggregate": lambda: self.viewer.aggregate(query), "/api/fields": self.viewer.fields,
               "/api/episode": lambda: self.viewer.episode(query), "/api/poll": self.viewer.refresh}  # fmt: skip
        answer = api.get(url.path)
        if answer is None:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {url.path}"})
            return
        try:
            self._json(HTTPStatus.OK, answer())
        except BadInputError as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})

    def do_POST(self) -> None:
        from toolshift.fileio import loads_json
        from toolshift.world.mcp.http_guard import host_allowed, misdirected

        host = self.headers.get("Host")
        if not host_allowed(host, str(self.server.server_address[0])):
            self._json(HTTPStatus.MISDIRECTED_REQUEST, {"error": misdirected(host)})
            return
        if urlsplit(self.path).path != "/api/notes":
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {self.path}"})
            return
        refused = _post_refused(self)
        if refused is not None:
            self._json(HTTPStatus.FORBIDDEN, {"error": refused})
            return
        try:
            length = int(self.headers.get("Content-Length") or "0")
        except ValueError:
            length = -1
        if not 0 < length <= MAX_BODY:
            self._json(HTTPStatus.BAD_REQUEST, {"error": f"a note's request is 1 to {MAX_BODY} bytes"})
            return
        try:
            body = loads_json(self.rfile.read(length), source="request")
            if not isinstance(body, dict):
                raise BadInputError("a JSON object", source="request")
            self._json(HTTPStatus.OK, self.viewer.note(body))
        except BadInputError as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})


def _post_refused(handler: BaseHTTPRequestHandler) -> str | None:
    """Why a POST is refused (None: accepted): it must be JSON, say it comes from the viewer's page, and, where
    the browser names its origin, come from this server's own."""
    if not is_loopback(
        str(handler.server.server_address[0])
    ):  # --allow-remote: read-only to whoever reaches it
        return "notes are written only when the viewer is bound to a loopback address"
    if handler.headers.get("X-Toolshift-View") != "1":
        return "a note is written from the viewer's page (X-Toolshift-View: 1)"
    if (handler.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
        return "a note is sent as application/json"
    origin = handler.headers.get("Origin")
    if origin is not None and urlsplit(origin).netloc != handler.headers.get("Host"):
        return f"a page of another origin ({origin}) may not write notes"
    return None


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
