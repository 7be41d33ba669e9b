"""The commit an episode records: this checkout's, marked dirty only when tracked source differs."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

import pytest

from toolshift.provenance import code_revision, describe_codes
from toolshift.shared import source_checkout


def test_the_checkouts_commit_is_recorded():
    root = source_checkout()
    if root is None or shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not running from a git checkout: the package version is recorded instead")
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "src"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert code_revision() == head + ("+dirty" if dirty else "")


def test_codes_are_described_most_episodes_first_and_older_ones_by_date():
    assert describe_codes(Counter({"aaaaaaa": 3, "bbbbbbb": 10})) == (
        "at bbbbbbb (10 episodes), aaaaaaa (3 episodes)"
    )
    mixed = describe_codes(
        Counter({"unrecorded": 1, "ccccccc": 2}), ["2026-12-04T02:15:59+00:00", "2026-12-03T01:00:00+00:00"]
    )
    assert mixed == (
        "at ccccccc (2 episodes); 1 episode before episodes recorded their commit "
        "(files created 2026-12-03, 2026-12-04)"
    )
    assert describe_codes(Counter()) == ""
