"""The report's HTML: one self-contained page (inline CSS, figures as PNG data URIs, no script, no network)."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolshift.fileio import read_bytes
from toolshift.intervals import Interval

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#fafbfc}
header{background:#1d2330;color:#fff;padding:18px 28px}header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#c8cdd8}
nav{padding:10px 28px;background:#eef1f5;border-bottom:1px solid #d8dde6}
nav a{margin-right:16px;color:#2a4d8f;text-decoration:none}
main{padding:8px 28px 40px;max-width:1400px}
section{margin:26px 0;padding:16px 20px;background:#fff;border:1px solid #e1e5ec;border-radius:6px}
section h2{margin:0 0 10px;font-size:18px}section h3{font-size:15px;margin:18px 0 6px}
.table-scroll{max-width:100%;overflow-x:auto;margin:8px 0 14px}
table{border-collapse:collapse;margin:0;font-size:13px}
th,td{border:1px solid #dfe3ea;padding:4px 8px;text-align:right;vertical-align:top;white-space:nowrap}
th{background:#f3f5f8;font-weight:600}td.l,th.l{text-align:left;white-space:normal}
figure{margin:10px 0}figure img{max-width:100%;border:1px solid #eceff4}
figcaption{font-size:12px;color:#5b6475}
.note{color:#5b6475;font-size:13px}.bad{color:#a4262c}.ok{color:#1e7b3a}
.problems{background:#fff4f4;border:1px solid #f0c5c7;padding:8px 12px;border-radius:4px}
.problems li{font-family:ui-monospace,monospace;font-size:12px;word-break:break-all}
code{font-family:ui-monospace,monospace;font-size:12px;background:#f3f5f8;padding:1px 3px}
tr.group th{background:#e9edf3;text-align:left;font-weight:600;white-space:normal}
thead th{white-space:normal;vertical-align:bottom}
details>summary{cursor:pointer;color:#2a4d8f}
.banner{margin:14px 28px 0;max-width:1400px}
@media (prefers-color-scheme:dark){
body{color:#dfe4ee;background:#14171d}nav{background:#1c2129;border-color:#2c3340}nav a{color:#8fb4ff}
section{background:#1a1e25;border-color:#2c3340}th{background:#222833}th,td{border-color:#2c3340}
tr.group th{background:#283040}.note,figcaption{color:#9aa4b5}code{background:#222833}
figure img{background:#fff}.problems{background:#3a1d20;border-color:#6b2d33}details>summary{color:#8fb4ff}}
"""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def pct(iv: Interval, digits: int = 1) -> str:
    """`42.3 [38.1, 46.0]` (percent, 95% interval), `–` when nothing was measured."""
    return iv.percent(digits)


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, left: int = 1, css: str = "") -> str:
    """An HTML table; the first `left` columns are left-aligned (labels), the rest right-aligned (figures)."""

    def cell(tag: str, k: int, v: Any) -> str:
        cls = ' class="l"' if k < left else ""
        return f"<{tag}{cls}>{esc(v)}</{tag}>"

    head = "".join(cell("th", k, h) for k, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell("td", k, v) for k, v in enumerate(row)) + "</tr>" for row in rows)
    cls = f' class="{css}"' if css else ""
    table_html = f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f'<div class="table-scroll">{table_html}</div>'  # a wide table scrolls inside its card


def png_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def figure_png(fig: Any, *, dpi: int = 100) -> bytes:
    """A matplotlib figure as PNG bytes (the figure is closed)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()


def figure(data: bytes, caption: str, alt: str) -> str:
    return f'<figure><img alt="{esc(alt)}" src="{png_uri(data)}"><figcaption>{esc(caption)}</figcaption></figure>'


def figure_file(path: Path, caption: str, alt: str) -> str:
    """A PNG some capability wrote to a file (e.g. the drift plot), embedded."""
    return figure(read_bytes(path, what="figure"), caption, alt)


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@dataclass
class Section:
    """One part of the report: an anchor id, a title, its HTML, and problems to show at its top."""

    id: str
    title: str
    body: str
    problems: list[str] = field(default_factory=list)

    def html(self) -> str:
        probs = ""
        if self.problems:
            items = "".join(f"<li>{esc(p)}</li>" for p in self.problems)
            probs = f'<div class="problems"><b>Left out here:</b><ul>{items}</ul></div>'
        return f'<section id="{esc(self.id)}"><h2>{esc(self.title)}</h2>{probs}{self.body}</section>'


def page(title: str, subtitle: str, sections: Sequence[Section], banner: str = "") -> str:
    """The whole report. Nothing in it is fetched: styles inline, images as data URIs, no scripts. `banner`
    (HTML) stands above the first section: what the reader must know before the results (files left out)."""
    nav = "".join(f'<a href="#{esc(s.id)}">{esc(s.title)}</a>' for s in sections)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = "".join(s.html() for s in sections)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; '
        "style-src 'unsafe-inline'\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{esc(title)}</h1><p>{esc(subtitle)} · written {stamp}</p></header>"
        f"<nav>{nav}</nav>{banner}<main>{body}</main></body></html>\n"
    )
