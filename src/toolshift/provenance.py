"""Which code made an artefact: the source checkout's commit (marked dirty when `src/` differs), else the version.

An episode file that a resumable run appends to over several sessions holds episodes made by different
code; each episode records its own (`source.code`), so a results page can say which commit made which rows
instead of a hand-written note beside a generated table.
"""

from __future__ import annotations

import functools
import subprocess
from collections import Counter
from collections.abc import Iterable

from toolshift import __version__
from toolshift.shared import source_checkout

UNRECORDED = "unrecorded"
"""The key for episodes made before episodes carried their code (their file's `created` date says when)."""


@functools.cache
def code_revision() -> str:
    """`<short commit>` of the checkout this package runs from, `+dirty` when tracked files under `src/`
    differ from it; `toolshift <version>` for an installed wheel or where git cannot answer. Computed once
    per process (a worker computes its own: the same checkout, the same answer)."""
    root = source_checkout()
    if root is None:
        return f"toolshift {__version__}"
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=7", "HEAD"],
            capture_output=True, text=True, check=False, timeout=30,
        )  # fmt: skip
        if head.returncode != 0 or not head.stdout.strip():
            return f"toolshift {__version__}"
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "src"],
            capture_output=True, text=True, check=False, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return f"toolshift {__version__}"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def describe_codes(counts: Counter[str] | dict[str, int], created: Iterable[str] = ()) -> str:
    """`at 8e069e6 (504 episodes)`, several commits most episodes first; episodes with no record named by
    their files' creation dates (`before episodes recorded their commit (files created 2026-12-04)`)."""
    parts = [
        f"{code} ({n} episode{'s' if n != 1 else ''})"
        for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if code != UNRECORDED
    ]
    text = "at " + ", ".join(parts) if parts else ""
    unrecorded = counts.get(UNRECORDED, 0)
    if unrecorded:
        days = sorted({c[:10] for c in created if c})
        when = f" (files created {', '.join(days)})" if days else ""
        left = f"{unrecorded} episode{'s' if unrecorded != 1 else ''} before episodes recorded their commit{when}"
        text = f"{text}; {left}" if text else left
    return text


__all__ = ["UNRECORDED", "code_revision", "describe_codes"]
