"""Run a run's episodes in worker processes, one share each, while the parent alone writes every episode.

The embedded model decodes on one thread (`load_llama(n_threads=1)`), so a run of it uses one core of
the machine however many it has; `workers` processes, each with the model loaded once, use that many.
Each worker gets a share of the episodes still to run (a job function importable by name, and its
picklable arguments), sends each finished episode to the parent as JSON, and the parent appends it to
the run's one file as it arrives: the file, its resume rule (episodes already in it by id are not run
again) and its contents are the same as a one-process run's, only their order differs. A worker that
fails stops the run with its traceback; an interrupted run keeps every episode already written.
"""

from __future__ import annotations

import multiprocessing
import queue
from collections.abc import Callable, Sequence
from typing import Any

from toolshift.errors import ToolshiftError

Emit = Callable[[str], None]
"""What a job calls with each finished episode's JSON."""
Job = Callable[[Any, Emit], None]
"""A share's work: `job(share, emit)`; a module-level function, so a spawned process can import it."""

_POLL = 1.0
"""Seconds between checks that every worker still lives while none has sent anything."""


def _worker(job: Job, share: Any, out: Any) -> None:
    import traceback

    try:
        job(share, lambda payload: out.put(("episode", payload)))
    except BaseException:  # reported to the parent, which stops the run with it
        out.put(("error", traceback.format_exc()))
    else:
        out.put(("done", None))


def split_shares(items: Sequence[Any], workers: int) -> list[list[Any]]:
    """`items` dealt round-robin to at most `workers` non-empty shares (so each share reaches every version
    of a version-ordered list at about the same time as the others)."""
    n = max(1, min(workers, len(items)))
    return [list(items[k::n]) for k in range(n)]


def run_in_workers(job: Job, shares: Sequence[Any], on_episode: Emit) -> None:
    """Run `job(share, emit)` for each share in its own spawned process; `on_episode(json)` in this process
    for every episode any of them emits, in arrival order. Returns when every share is done."""
    context = multiprocessing.get_context("spawn")  # no fork: the parent may hold threads and a model
    out = context.Queue()
    procs = [context.Process(target=_worker, args=(job, share, out), daemon=True) for share in shares]
    for p in procs:
        p.start()
    finished = 0
    try:
        while finished < len(procs):
            try:
                kind, payload = out.get(timeout=_POLL)
            except queue.Empty:
                dead = [p for p in procs if not p.is_alive() and p.exitcode not in (0, None)]
                if dead and out.empty():
                    raise ToolshiftError(
                        f"a worker process died (exit code {dead[0].exitcode}) before finishing its share"
                    ) from None
                continue
            if kind == "episode":
                on_episode(payload)
            elif kind == "error":
                raise ToolshiftError(f"a worker process failed:\n{payload}")
            else:
                finished += 1
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout=10)
        out.close()


__all__ = ["Emit", "Job", "run_in_workers", "split_shares"]
