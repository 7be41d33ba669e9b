"""The viewer's list queries beyond the index's filters: full-text search over message text, and sorting.

Search matches, case-insensitively, an episode's id, its task id, or the text of its messages (contents,
the names and arguments of tool calls, tool results). The message text of a file is read once, on the
first search that needs it, and kept in memory (one entry per file; a file grown by appends has only its
new lines read), so a second search costs one pass over strings, not over the file. Sorting is by one list column, ascending
or descending, ties kept in row order.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import numpy as np

from toolshift.errors import BadInputError
from toolshift.fileio import loads_json
from toolshift.report.episode_index import FACETS, FileIndex, RunSet

SORTS = {"id": "id", "task": "task_id", "agent": "agent", "version": "version", "outcome": "outcome",
         "collateral": "collateral", "turns": "turns", "calls": "calls", "domain": "domain",
         "trial": "trial", "strict": "strict", "run": "run", "condition": "condition", "harness": "harness",
         "kind": "kind"}  # fmt: skip
"""Sort keys the list accepts, by the name the page sends, and the column each reads."""

_TEXTS: dict[str, tuple[np.ndarray, list[str]]] = {}
"""Per file read: its rows' byte offsets when its text was read, and that text (one entry per file)."""
_LOCK = threading.Lock()


def message_text(doc: Any) -> str:
    """The searchable text of one episode line: every message's content, and its calls' names and arguments."""
    parts: list[str] = []
    messages = doc.get("messages") if isinstance(doc, dict) else None
    for m in messages if isinstance(messages, list) else ():
        if not isinstance(m, dict):
            continue
        if isinstance(m.get("content"), str):
            parts.append(m["content"])
        for c in m.get("tool_calls") or ():
            if isinstance(c, dict):
                parts.append(str(c.get("name", "")))
                parts.append(json.dumps(c.get("arguments"), ensure_ascii=False))
    return "\n".join(parts).lower()


def file_texts(index: FileIndex) -> list[str]:
    """The lower-cased message text of every episode of a file, read once per version of the file.

    One entry per file is kept; when the file grew by appends (a run still writing: every earlier line
    where it was), only the new lines are read."""
    path = str(index.read_from.resolve())
    offsets = index.columns["offset"]
    with _LOCK:
        kept = _TEXTS.get(path)
    texts: list[str] = []
    if kept is not None:
        old_offsets, old_texts = kept
        n = old_offsets.size
        if n <= offsets.size and np.array_equal(old_offsets, offsets[:n]):
            if n == offsets.size:
                return old_texts
            texts = list(old_texts)
    with index.read_from.open("rb") as fh:
        for offset, length in zip(
            offsets[len(texts) :].tolist(), index.columns["length"][len(texts) :].tolist(), strict=True
        ):
            fh.seek(offset)
            try:
                texts.append(message_text(loads_json(fh.read(length))))
            except BadInputError:
                texts.append("")  # the index took the line; a line it cannot parse now has no text
    with _LOCK:
        _TEXTS[path] = (offsets.copy(), texts)
    return texts


HITS_KEPT = 16
"""Searches whose row masks a run set keeps: a page, its facets and its figures share one."""


def text_hits(rs: RunSet, needle: str) -> np.ndarray:
    """Every row whose id, task id or message text contains `needle` (lower-cased), once per run set."""
    with _LOCK:
        kept: dict[str, np.ndarray] = rs.__dict__.setdefault(
            "_view_hits", {}
        )  # lives and dies with the run set
        found = kept.get(needle)
    if found is not None:
        return found
    hit = rs.mask({}, text=needle)
    for k, f in enumerate(rs.files):
        mine = np.nonzero((rs.file_of == k) & ~hit)[0]
        if mine.size:
            texts = file_texts(f)
            hit[mine] = [needle in texts[int(r)] for r in rs.row_of[mine]]
    with _LOCK:
        while len(kept) >= HITS_KEPT:
            kept.pop(next(iter(kept)))
        kept[needle] = hit
    return hit


def search_mask(rs: RunSet, filters: dict[str, str], text: str, *, without: str | None = None) -> np.ndarray:
    """Rows matching the filters and, when `text` is given, matching it in id, task or message text."""
    keep = rs.mask(filters, without=without)
    needle = text.strip().lower()
    return keep & text_hits(rs, needle) if needle else keep


def facets(
    rs: RunSet, filters: dict[str, str], text: str, limit: int = 200, also: np.ndarray | None = None
) -> dict[str, list[list[Any]]]:
    """`RunSet.facets` with the full-text search: each column's values counted under the other filters (and `also`,
    the rows a filter expression keeps)."""
    if not text.strip() and also is None:
        return rs.facets(filters, limit=limit)
    out: dict[str, list[list[Any]]] = {}
    for name in FACETS:
        keep = search_mask(rs, filters, text, without=name)
        if also is not None:
            keep &= also
        counts = np.bincount(rs.codes[name][keep], minlength=len(rs.values[name]))
        order = np.argsort(-counts, kind="stable")[:limit] if name == "task_id" else range(len(counts))
        out[name] = [[rs.values[name][i], int(counts[i])] for i in order if counts[i] > 0]
    return out


def sort_rows(rs: RunSet, rows: np.ndarray, key: str, descending: bool = False) -> np.ndarray:
    """`rows` ordered by a list column (one of SORTS); equal values keep row order either way."""
    column = SORTS.get(key)
    if column is None:
        raise BadInputError(f"sort is one of {', '.join(SORTS)}, not {key!r}", field="sort")
    if column in rs.codes:
        values = rs.values[column]
        rank = np.empty(len(values), dtype=np.int64)
        rank[np.argsort(np.asarray(values, dtype=object), kind="stable")] = np.arange(len(values))
        keys = rank[rs.codes[column][rows]] if len(values) else np.zeros(rows.size, np.int64)
    elif column == "id":
        ids = np.asarray([rs._id(int(r)) for r in rows], dtype=object)
        rank_of = {v: i for i, v in enumerate(sorted(set(ids.tolist())))}
        keys = np.asarray([rank_of[v] for v in ids.tolist()], dtype=np.int64)
    else:
        keys = rs.numeric(column)[rows]
    order = np.lexsort((rows, -keys if descending else keys))
    return rows[order]
