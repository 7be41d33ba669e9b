"""The viewer's filtered set as a file to download: one row per episode, as CSV or JSON, from the index alone."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import numpy as np

from toolshift.errors import BadInputError
from toolshift.report.episode_index import RunSet

COLUMNS = ("id", "file", "line", "run", "condition", "kind", "harness", "agent", "model", "domain", "task_id",
           "version", "trial", "outcome", "strict", "collateral", "missing", "turns", "calls", "failed", "tokens",
           "termination")  # fmt: skip
"""The columns, in order (`collateral` and `missing` are -1 where the episode did not record them)."""
MAX_ROWS = 200_000


def table_rows(rs: RunSet, rows: np.ndarray) -> list[dict[str, Any]]:
    if rows.size > MAX_ROWS:
        raise BadInputError(
            f"{rows.size} episodes match; a table holds at most {MAX_ROWS}: filter more", field="rows"
        )
    return [{k: s[k] for k in COLUMNS} for s in (rs.summary(int(r)) for r in rows)]


def table_csv(rs: RunSet, rows: np.ndarray) -> bytes:
    """CSV with a header line, UTF-8; a cell that a spreadsheet would read as a formula is quoted with a `'`."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in table_rows(rs, rows):
        writer.writerow({k: f"'{v}" if isinstance(v, str) and v[:1] in ("=", "+", "-", "@") else v
                         for k, v in row.items()})  # fmt: skip
    return out.getvalue().encode("utf-8")


def table_json(rs: RunSet, rows: np.ndarray) -> bytes:
    """`{format: toolshift.view-table/1, columns, rows: [{column: value}]}`."""
    body = {"format": "toolshift.view-table/1", "columns": list(COLUMNS), "rows": table_rows(rs, rows)}
    return json.dumps(body, ensure_ascii=False).encode("utf-8")
