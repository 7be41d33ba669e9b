"""How often the gateway's free-text secret scan redacts what is not a secret, on this repository's own episodes.

Every episode file in docs/results/episodes/ (the `.jsonl.gz` stores and the loop run's tarball, whose
`recordings.jsonl` files are gateway recordings) holds synthetic benchmark traffic: no credential is in it, so
every string the scan changes is a false redaction. For each file, every string of every message (content,
call arguments, names) goes through `Redactor(scan=True).value` exactly as the recorder redacts, beside a
`Redactor(scan=False)` (names, known values, `name: value` pairs only); the page counts the strings each
changed and shows the first changed ones. A fixed list of secrets in the formats the scan is for (and one
the scan misses on purpose: a low-entropy password) shows what it catches.

Run: `.venv/bin/python bench/secrets_false_redactions.py` → docs/results/secrets.md (D306).
"""

from __future__ import annotations

import gzip
import io
import json
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolshift.fileio import write_text_atomic
from toolshift.gateway.secrets import REDACTED, Redactor

REPO = Path(__file__).resolve().parents[1]
EPISODES = REPO / "docs" / "results" / "episodes"
OUT = REPO / "docs" / "results" / "secrets.md"
PLANTED = {
    "AWS access key": "AKIAIOSFODNN7EXAMPLE",
    "GitHub token": "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
    "Slack bot token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "Stripe live key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "JWT": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "base64 API token": "c2VjcmV0LXRva2VuLWZvci1hcGktYWNjZXNzLTEyMzQ1Njc4OQ==",
    "hex API key": "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    "generated password in a search": "q7#Vd!2pLx@9Zr$4Kt^w",
    "password in a sentence": "my new one is Tr0ub4dor&3xY, keep it",
    "low-entropy password (not caught)": "P@ssw0rd2024!",
}  # fmt: skip


def _records(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(file label, JSON record) for every line of a store, or of every `.jsonl` in a tarball."""
    if path.name.endswith(".tar.gz"):
        with tarfile.open(path) as tar:
            for member in tar:
                if member.isfile() and member.name.endswith(".jsonl"):
                    fh = tar.extractfile(member)
                    assert fh is not None
                    for line in io.TextIOWrapper(fh, encoding="utf-8"):
                        yield f"{path.name}:{member.name}", json.loads(line)
        return
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            yield path.name, json.loads(line)


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def main() -> int:
    scanned, plain = Redactor(scan=True), Redactor(scan=False)
    rows: list[tuple[str, int, int, int, int, int]] = []
    shown: list[str] = []
    started = time.process_time()
    for path in sorted(EPISODES.glob("*.gz")):
        per: dict[str, list[int]] = {}
        for label, record in _records(path):
            if "messages" not in record:
                continue
            name = label.split(":")[0] + (" (recordings)" if label.endswith("recordings.jsonl") else "")
            counts = per.setdefault(name, [0, 0, 0, 0, 0])
            counts[0] += 1
            for s in _strings(record["messages"]):
                counts[1] += 1
                by_scan, by_names = scanned.value(s) != s, plain.value(s) != s
                counts[2] += by_scan
                counts[3] += by_names
                counts[4] += by_scan and not by_names
                if by_scan and not by_names and len(shown) < 10:
                    shown.append(f"{label}: {s[:120]!r}")
        rows += [(name, *c) for name, c in sorted(per.items())]  # type: ignore[misc]
    seconds = time.process_time() - started
    caught = {name: REDACTED in Redactor(scan=True).value(text) for name, text in PLANTED.items()}
    episodes, strings = sum(r[1] for r in rows), sum(r[2] for r in rows)
    by_scan, by_names, only = sum(r[3] for r in rows), sum(r[4] for r in rows), sum(r[5] for r in rows)
    lines = [
        "# Free-text secret scanning: false redactions on this repository's episodes (D306)",
        "",
        "Made by `.venv/bin/python bench/secrets_false_redactions.py` (docs/results/episodes/, every string of",
        "every message through the gateway's `Redactor(...).value`; no file there holds a credential, so every",
        "redaction is a false one).",
        "",
        "| file | episodes | strings | redacted with the scan | by names and values alone | by the scan alone |",
        "|---|---:|---:|---:|---:|---:|",
        *[f"| {n} | {e:,} | {s:,} | {a:,} | {b:,} | {o:,} |" for n, e, s, a, b, o in rows],
        f"| **all** | **{episodes:,}** | **{strings:,}** | **{by_scan:,}** | **{by_names:,}** | **{only:,}** |",
        "",
        f"False-redaction rate with the scan: {by_scan:,} of {strings:,} strings"
        f" ({100 * by_scan / max(strings, 1):.4f}%), of which the scan alone changed {only:,}"
        f" ({100 * only / max(strings, 1):.4f}%). CPU time for the whole pass, both redactors: {seconds:.0f} s.",
        "",
        *(["Strings the scan alone changed:", "", *[f"- {x}" for x in shown], ""] if shown else []),
        "What the scan catches (each written alone as a string value):",
        "",
        "| secret | redacted |",
        "|---|---|",
        *[f"| {name} | {'yes' if ok else 'no'} |" for name, ok in caught.items()],
        "",
    ]
    write_text_atomic(OUT, "\n".join(lines))
    print(f"wrote {OUT}: {by_scan} of {strings} strings redacted with the scan, {by_names} without")
    return 0


if __name__ == "__main__":
    sys.exit(main())
