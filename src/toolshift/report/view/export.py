"""`toolshift view RUNS --export DIR`: a filtered set of episodes as one HTML page that opens without a server.

Like inspect's `view bundle`: the page is the viewer's own (its HTML, CSS and scripts inlined) with the
selection's data in a JSON script element (`toolshift.view-export/1`, docs/formats.md), which a small
script answers the viewer's API from. The selection is written in the viewer's own address syntax
(`agent=gpt-4o&outcome=failure&q=Mia&sort=turns&desc=1`, what follows `#` in the viewer), so a set found
in the viewer is exported by copying its address. The page's Content-Security-Policy allows only its own
inline script and style (by hash): it loads nothing and sends nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs

from toolshift.errors import BadInputError
from toolshift.fileio import write_text_atomic
from toolshift.report.view.aggregate import aggregate
from toolshift.report.view.query import sort_rows
from toolshift.report.view.server import SCRIPTS, STATIC, Viewer

EXPORT_FORMAT: Final = "toolshift.view-export/1"
MAX_EXPORT = 2000
"""The most episodes one export holds (every episode is in the page in full)."""
SELECT_KEYS = {"task", "agent", "model", "version", "outcome", "strict", "domain", "file", "run", "condition",
               "harness", "kind", "q", "expr", "sort", "desc"}  # fmt: skip


def parse_select(select: str) -> dict[str, str]:
    """The viewer's address syntax (`name=value&…`, a leading `#` allowed) as a query; unknown names refused."""
    query = {k: v[-1] for k, v in parse_qs(select.lstrip("#"), keep_blank_values=True).items()}
    unknown = sorted(set(query) - SELECT_KEYS - {"row", "offset", "id", "id_file", "step", "vs", "vs_file"})
    if unknown:
        raise BadInputError(
            f"--select names {', '.join(unknown)}; it takes {', '.join(sorted(SELECT_KEYS))}", field="select"
        )
    return {k: v for k, v in query.items() if k in SELECT_KEYS}


def _sha(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def bundle(viewer: Viewer, query: dict[str, str]) -> dict[str, Any]:
    """The selection's data: its rows renumbered 0…n-1, every episode as the API answers it, its figures."""
    runs, _, _, rows = viewer.selection(query)
    if query.get("sort"):
        rows = sort_rows(runs, rows, query["sort"], descending=query.get("desc") == "1")
    if rows.size == 0:
        raise BadInputError("no episode matches the selection", field="select")
    if rows.size > MAX_EXPORT:
        raise BadInputError(
            f"{rows.size} episodes match; an export holds at most {MAX_EXPORT}: narrow --select",
            field="select",
        )
    summaries, episodes = [], []
    for i, r in enumerate(rows.tolist()):
        answer = viewer.episode({"row": str(r)})
        answer["notes"] = {**answer.get("notes", {}), "path": ""}  # shown, not written, in the page
        answer["summary"] = {**answer["summary"], "row": i}
        summaries.append(answer["summary"])
        episodes.append(answer)
    info = viewer.runs_info()
    files = sorted({s["file"] for s in summaries})
    described = "&".join(f"{k}={v}" for k, v in sorted(query.items())) or "everything"
    return {
        "format": EXPORT_FORMAT,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "selection": query,
        "runs": {
            "files": [f for f in info["files"] if f["path"] in files],
            "episodes": len(summaries),
            "recordings": sum(1 for r in summaries if r["kind"] == "recording"),
            "command": info["command"],
            "bad_files": [],
            "problems": [],
            "flow": info["flow"],
            "builds": info["builds"],
            "generation": 0,
            "live": False,
            "exported": f"{described}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        },
        "rows": summaries,
        "episodes": episodes,
        "aggregate": aggregate(runs, rows),
        "fields": viewer.fields(),
    }


def render(data: dict[str, Any]) -> str:
    """The viewer's page with its CSS, scripts and `data` inlined; a CSP that admits only those, by hash."""
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    css = (STATIC / "viewer.css").read_text(encoding="utf-8")
    script = "\n".join((STATIC / n).read_text(encoding="utf-8") for n in ("local.js", *SCRIPTS))
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    payload = payload.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    csp = f"default-src 'none'; script-src '{_sha(script)}'; style-src '{_sha(css)}'; img-src data:"
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>',
                  f'<meta http-equiv="Content-Security-Policy" content="{csp}">', html)  # fmt: skip
    html = html.replace('<link rel="stylesheet" href="viewer.css">', f"<style>{css}</style>")
    html = html.replace('<link rel="icon" href="data:,">\n', "")  # nothing to load, not even an icon
    tags = r"\s*".join(re.escape(f'<script src="{name}"></script>') for name in SCRIPTS)
    html = re.sub(tags, lambda _: f'<script type="application/json" id="bundle">{payload}</script>\n<script>{script}</script>',
                  html)  # fmt: skip
    return html.replace("<title>toolshift view</title>", "<title>toolshift view (export)</title>")


def export(viewer: Viewer, query: dict[str, str], out: Path) -> tuple[Path, int]:
    """Write `out/index.html` for the selection; (its path, the number of episodes in it)."""
    data = bundle(viewer, query)
    out.mkdir(parents=True, exist_ok=True)
    page = out / "index.html"
    write_text_atomic(page, render(data))
    return page, len(data["rows"])
