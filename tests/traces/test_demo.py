"""The traces demo step runs on embedded data and a live MCP world, and reports an exact round trip."""

from __future__ import annotations

import io

from rich.console import Console

from toolshift.traces.demo import run


def test_demo_step():
    buffer = io.StringIO()
    run(Console(file=buffer, width=160))
    text = buffer.getvalue()
    assert "catalog of the clinic world from MCP tools/list" in text
    assert "kept 2" in text and "yes" in text
