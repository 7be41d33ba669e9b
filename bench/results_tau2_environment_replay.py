"""Environment replay of the τ-bench GPT-4o airline runs against our live airline world, beside the record.

Each of the 100 recorded episodes (50 test tasks × 2 trials, /work/shared/data/tau-bench) is replayed
on a fresh `tau2-airline` world: the agent's calls in order, each answered live, and each live answer
set beside the recorded one (what a trace replay would serve). The record was made in τ-bench v1's
environment; our world follows τ²-bench's airline, which renamed and added some fields (a user's
address `province` became `state`, reservations got a `status`, searches return a `date`) and dropped
the `think` tool, so the table counts, per tool, how often the two agree on success or failure and
how often they are the very same JSON, with the first difference seen.

Run: `.venv/bin/python bench/results_tau2_environment_replay.py` → docs/results/tau2-airline-environment-replay.md
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from toolshift.traces.episode import paired_calls
from toolshift.traces.store import read_episodes
from toolshift.world import World, load_domain

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "results" / "tau2-airline-environment-replay.md"
RUNS = "data/tau-bench/gpt-4o-airline.trials-0-1.json"


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    if type(a) is not type(b):
        return f"{path or 'result'}: live {type(a).__name__}, recorded {type(b).__name__}"
    if isinstance(a, dict):
        for k in list(b) + [k for k in a if k not in b]:
            if k not in a or k not in b:
                return f"{path}.{k}: only {'recorded' if k in b else 'live'}"
            found = first_difference(a[k], b[k], f"{path}.{k}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path or 'result'}: live {len(a)} items, recorded {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path or 'result'}: live {json.dumps(a)[:60]}, recorded {json.dumps(b)[:60]}"


def recorded(message: Any) -> tuple[bool, Any]:
    text = message.content or ""
    if message.error or text.startswith(("Error:", "Unknown action")):
        return False, text
    try:
        return True, json.loads(text)
    except json.JSONDecodeError:
        return True, text


def main() -> None:
    from toolshift.world.tau2 import files

    source = files.locate(RUNS)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "toolshift", "traces", "convert", "taubench-v1", str(source), "--out", tmp],
            check=True, capture_output=True,
        )  # fmt: skip
        episodes = list(read_episodes(sorted(Path(tmp).glob("*.episodes.jsonl"))))
    domain = load_domain("tau2-airline")
    stats: dict[str, Counter[str]] = defaultdict(Counter)
    example: dict[str, str] = {}
    for episode in episodes:
        world = World(domain)
        for _, call, message in paired_calls(episode):
            s = stats[call.name]
            s["calls"] += 1
            live = world.call(call.name, dict(call.arguments))
            if message is None:
                s["unrecorded"] += 1
                continue
            ok, value = recorded(message)
            s["recorded failures"] += not ok
            s["live failures"] += not live.ok
            if ok != live.ok:
                example.setdefault(
                    call.name,
                    f"live {'ok' if live.ok else live.error['message']!r}, recorded {str(value)[:60]!r}",
                )
                continue
            s["same outcome"] += 1
            if ok:
                diff = first_difference(live.result, value)
                if diff is None:
                    s["same result"] += 1
                else:
                    example.setdefault(call.name, diff)
            else:
                s["same result"] += 1  # both failed (messages differ in wording between v1 and τ²)
        world.close()
    total: Counter[str] = Counter()
    lines = [
        "# τ-bench GPT-4o airline runs: environment replay on our live airline world beside the record",
        "",
        f"Made by `.venv/bin/python bench/results_tau2_environment_replay.py` from `{RUNS}` "
        f"({len(episodes)} episodes). Each call is answered live by a fresh `tau2-airline` world that has "
        "seen the episode's earlier calls; the record is what τ-bench v1's environment answered then.",
        "",
        "| tool | calls | recorded failures | live failures | same outcome | same result | first difference seen |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in sorted(stats, key=lambda n: -stats[n]["calls"]):
        s = stats[name]
        total.update(s)
        lines.append(
            f"| {name} | {s['calls']} | {s['recorded failures']} | {s['live failures']} | {s['same outcome']} | "
            f"{s['same result']} | {example.get(name, '').replace('|', '/')} |"
        )
    lines.append(
        f"| **all** | {total['calls']} | {total['recorded failures']} | {total['live failures']} | "
        f"{total['same outcome']} | {total['same result']} | |"
    )
    lines += [
        "",
        "*same outcome*: both succeeded or both failed. *same result*: identical JSON (a failure on both sides "
        "counts as the same: v1's and τ²'s messages are worded differently). The differences are τ²-bench's "
        "changes to the airline environment since τ-bench v1 recorded these runs: fields added or renamed "
        "(a reservation's `status`, a search result's `date`, an address's `province` → `state`), no `think` "
        "tool, `calculate` returning a string and `list_all_airports` a list, and state that drifts once an "
        "episode writes: τ²'s `update_reservation_flights` records the new cabin (v1's kept the old one) and "
        "its `book_reservation` takes the seats (v1's did not). Our world is checked against τ²-bench, not "
        "v1 (tests/world/test_tau2_agreement.py).",
        "",
    ]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = OUT.with_name(OUT.name + ".tmp")
    tmp_out.write_text("\n".join(lines), encoding="utf-8")
    tmp_out.replace(OUT)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
