"""The flows step of `toolshift demo`: the τ-bench airline replay it prints, and its skip without the data."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from toolshift.flows import demo


@pytest.mark.shared
def test_demo_step_prints_both_deciders_on_held_out_airline_runs(shared_data, monkeypatch):
    monkeypatch.setattr(demo, "default_data_dir", lambda: shared_data)
    buffer = io.StringIO()
    demo.run(Console(file=buffer, width=200))
    lines = {
        line.split("│")[1].strip(): line for line in buffer.getvalue().splitlines() if line.count("│") > 2
    }
    assert "28 successful training runs" in buffer.getvalue() and "40 held-out runs" in buffer.getvalue()
    assert "30 (6.5%)" in lines["reach"] and "26 (5.6%)" in lines["next-step"]


def test_demo_step_skips_without_the_shared_data(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "default_data_dir", lambda: tmp_path)
    buffer = io.StringIO()
    demo.run(Console(file=buffer, width=200))
    assert "not found" in buffer.getvalue() and "skipping" in buffer.getvalue()
