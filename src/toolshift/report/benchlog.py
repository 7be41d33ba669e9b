"""Append benchmark figures, with a description of the machine, to docs/benchmarks.md."""

from __future__ import annotations

import contextlib
import fcntl
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path

DEFAULT_LOG = Path(__file__).resolve().parents[3] / "docs" / "benchmarks.md"


def machine_description() -> str:
    """CPU model, cores, memory, Python, commit and load: enough to tell two runs' conditions apart."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    commit = ""
    with contextlib.suppress(OSError):
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).parent,
        ).stdout.strip()
    load = ""
    with contextlib.suppress(OSError, AttributeError):
        one, five, _ = os.getloadavg()
        load = f", load average {one:.2f} (1 min) / {five:.2f} (5 min) when recorded (the benchmark itself adds about 1)"
    return (
        f"{cpu}, {os.cpu_count()} cores{mem}, Python {platform.python_version()}"
        + (f", commit {commit}" if commit else "")
        + load
    )


def record(name: str, rows: list[tuple[str, str, str]], *, note: str = "", log: Path | None = None) -> str:
    """Append one benchmark's figures as a markdown table (figure, value, target) and return the text.

    Set TOOLSHIFT_BENCH_LOG to write elsewhere (tests do), or `-` to print only.
    """
    target = os.environ.get("TOOLSHIFT_BENCH_LOG")
    path = log or (Path(target) if target and target != "-" else DEFAULT_LOG)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"### {name} — {stamp}", "", f"Machine: {machine_description()}", ""]
    if note:
        lines += [note, ""]
    lines += ["| figure | value | target |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    text = "\n".join(lines) + "\n\n"
    print(text)
    if target == "-":
        return text
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write(text)
        fcntl.flock(fh, fcntl.LOCK_UN)
    return text
