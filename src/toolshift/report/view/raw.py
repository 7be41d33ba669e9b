"""The raw model responses a τ²-bench results file keeps beside its messages (`raw_data`), for the viewer.

The episode store keeps what every harness records alike (content, calls, usage); τ²-bench also keeps
each model turn's raw response. The viewer reads it from the results file the episode was converted
from, once per version of the file, and shows it beside the message of the same position (when the
simulation's message count is the episode's; otherwise nothing is shown rather than a wrong pairing).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError

_CACHE: dict[tuple[str, int, int], dict[str, dict[int, Any]]] = {}
_LOCK = threading.Lock()


def _stamp(path: Path) -> tuple[str, int, int]:
    target = path / "results.json" if path.is_dir() else path
    st = target.stat()
    return str(path.resolve()), st.st_size, st.st_mtime_ns


def tau2_raw(path: Path, episode_id: str, messages: int) -> dict[int, Any]:
    """{message index: raw_data} of one simulation of a τ²-bench results file or folder (empty if none)."""
    from toolshift.traces.tau2 import _records

    key = _stamp(path)
    with _LOCK:
        found = _CACHE.get(key)
    if found is None:
        found = {}
        try:
            _, records, _ = _records(path)
        except BadInputError:
            records = []
        for _, _, sim in records:
            if not isinstance(sim, dict) or not isinstance(sim.get("messages"), list):
                continue
            raws = {
                j: m["raw_data"]
                for j, m in enumerate(sim["messages"])
                if isinstance(m, dict) and m.get("raw_data")
            }
            found[str(sim.get("id"))] = raws | {-1: len(sim["messages"])}
        with _LOCK:
            _CACHE[key] = found
    raws = found.get(episode_id)
    if not raws or raws.get(-1) != messages:
        return {}
    return {j: v for j, v in raws.items() if j >= 0}
