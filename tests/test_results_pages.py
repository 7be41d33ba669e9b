"""The committed results pages stand on one benchmark build: every page that names a build or an ecosystem
names the same one, and every page made from a bench build names which.

A page names its build as "build `<fingerprint>`" (`toolshift.bench.ecosystem.store.build_fingerprint`, a
hash of every domain's tasks file) and its evolved ecosystem as "ecosystem `eco-…`"; the commands that
make them print it. Two pages that disagree mean one was not regenerated when the build changed.
"""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
BUILD = re.compile(r"[Bb]uild `([0-9a-f]{16})`")
ECOSYSTEM = re.compile(r"[Ee]cosystem `(eco-[0-9a-f]{10})`")
MADE_FROM_A_BUILD = re.compile(r"toolshift bench build --out")


def _pages() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(RESULTS.glob("*.md"))}


def test_every_page_made_from_a_bench_build_names_it():
    unnamed = [
        name for name, text in _pages().items() if MADE_FROM_A_BUILD.search(text) and not BUILD.search(text)
    ]
    assert not unnamed, f"pages made from a bench build that do not name it: {unnamed}"


def test_pages_agree_on_the_build_and_the_ecosystem():
    builds = {name: set(BUILD.findall(text)) for name, text in _pages().items()}
    ecosystems = {name: set(ECOSYSTEM.findall(text)) for name, text in _pages().items()}
    assert sum(1 for b in builds.values() if b) >= 3, "expected the bench pages to name their build"
    named_builds = {b for bs in builds.values() for b in bs}
    named_ecosystems = {e for es in ecosystems.values() for e in es}
    assert len(named_builds) == 1, {n: sorted(b) for n, b in builds.items() if b}
    assert len(named_ecosystems) <= 1, {n: sorted(e) for n, e in ecosystems.items() if e}
