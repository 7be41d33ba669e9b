"""The deterministic train/test split by task: 40% of tasks held out, the same positions of every ten.

Tasks are split per domain. Within a domain, task ids are ordered by `task_order_key` (natural
order: runs of ASCII digits compare as numbers, ties broken by the raw id, so `"9" < "10"` and `"task-2" < "task-10"`), then cut
into consecutive blocks of ten; the tasks at 0-based positions 2, 5, 7 and 9 of each block are
held out (`test`), the other six are `train`. A last, shorter block holds out whichever of those
positions it has. No hashing and no randomness: the same ids always give the same split, and
adding tasks after the last id never moves an existing task.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from toolshift.traces.episode import Episode

Split = Literal["train", "test"]
HELD_OUT_POSITIONS = frozenset({2, 5, 7, 9})
BLOCK = 10


def task_order_key(task_id: str) -> tuple[tuple[tuple[int, int, str], ...], str]:
    """Natural order: ASCII digit runs compare numerically, other text as text; ties (`"01"`, `"1"`) by the raw id."""
    parts = re.findall(r"[0-9]+|[^0-9]+", task_id)
    return tuple((0, int(p), "") if p[0] in "0123456789" else (1, 0, p) for p in parts), task_id


def split_tasks(task_ids: Iterable[str]) -> dict[str, Split]:
    """Each distinct task id → `train` or `test` (see the module docstring)."""
    ordered = sorted(set(task_ids), key=task_order_key)
    return {tid: ("test" if i % BLOCK in HELD_OUT_POSITIONS else "train") for i, tid in enumerate(ordered)}


def split_by_domain(episodes: Iterable[Episode]) -> dict[tuple[str, str], Split]:
    """(domain, task id) → split, splitting each domain's tasks separately."""
    tasks: dict[str, set[str]] = {}
    for episode in episodes:
        tasks.setdefault(episode.domain, set()).add(episode.task_id)
    out: dict[tuple[str, str], Split] = {}
    for domain, ids in tasks.items():
        out.update({(domain, tid): split for tid, split in split_tasks(ids).items()})
    return out
