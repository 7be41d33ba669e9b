"""The τ-bench and τ²-bench files the τ² worlds are read from: where they are, and that they are the ones we expect.

Nothing is copied into the repository: every file is read from the shared folder at compile and run
time (`TOOLSHIFT_SHARED`, else `../shared` beside the repository). Each file is checked against the
SHA-256 of the published file the worlds were written for, so an altered or truncated file is named
rather than silently giving another world. JSON is parsed as data; nothing in it runs.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolshift.world.language.datasets import DataUnavailable

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest data file read (the largest, τ²'s retail db.json, is 2.8 MB)."""


@dataclass(frozen=True)
class DataFile:
    """One published file: its path under the shared folder and the SHA-256 of its bytes."""

    path: str
    sha256: str
    what: str


FILES: dict[str, DataFile] = {
    f.path: f
    for f in (
        DataFile(
            "data/tau-bench/airline/flights.json",
            "444d7565c68434a3e3fb72efd717f9f9cd5c56dce227f6f56e078f1cb0ed233a",
            "τ-bench airline flights",
        ),
        DataFile(
            "data/tau-bench/airline/reservations.json",
            "1cf0bbc58ad984be9de7c24dba6dd27393f94cdbd482d8524f6a54db1f561a8c",
            "τ-bench airline reservations",
        ),
        DataFile(
            "data/tau-bench/airline/users.json",
            "bd264e2a31e0fa35cdfef8987e70a0dd3776828b582fe90e7a44823a12eb4cea",
            "τ-bench airline users",
        ),
        DataFile(
            "data/tau2-bench/airline/policy.md",
            "10dc0525421521208be39cee235bba84a16e2bcba9899eb93d92cd81d2f62fc4",
            "τ²-bench airline policy",
        ),
        DataFile(
            "data/tau2-bench/airline/tasks.json",
            "ccd8ba737b4cc371415af70151187788f728d6108d0916e73bb4317b40542052",
            "τ²-bench airline tasks",
        ),
        DataFile(
            "data/tau2-bench/airline/split_tasks.json",
            "b22ced4d9a9850ac9aea31c53bdcb6d6009058140bd9acc7db37c1d36222ba8b",
            "τ²-bench airline split",
        ),
        DataFile(
            "data/tau2-bench/retail/db.json",
            "413a65160adbdb5fde0ffc0015c49b6d70250b10c18128de169b597af7766765",
            "τ²-bench retail database",
        ),
        DataFile(
            "data/tau2-bench/retail/policy.md",
            "2c9652afbce57d6e087768d37cda64d31c53d50b3e3225cfdb791bac66466467",
            "τ²-bench retail policy",
        ),
        DataFile(
            "data/tau2-bench/retail/tasks.json",
            "8e03ebce7901bd6218e7a7dc3105faa9324091a68058f7fe61c65262868812e8",
            "τ²-bench retail tasks",
        ),
        DataFile(
            "data/tau2-bench/retail/split_tasks.json",
            "ed0580ec52575b63fbf76568af42490da6ee7783ecb4aa81af46961291358f20",
            "τ²-bench retail split",
        ),
        DataFile(
            "data/tau-bench/gpt-4o-airline.trials-0-1.json",
            "8d0cb127cc14cc7c5ad816cf9d8ccb796a8983ac90c1516685848b262f63b967",
            "τ-bench GPT-4o airline runs (the 50 test tasks)",
        ),
    )
}


def shared_root() -> Path:
    """The shared folder: `TOOLSHIFT_SHARED`, else `shared/` beside the repository."""
    env = os.environ.get("TOOLSHIFT_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[5] / "shared"


def locate(path: str) -> Path:
    """The file on this machine; `DataUnavailable` naming it when it is not there."""
    full = shared_root() / path
    if not full.is_file():
        raise DataUnavailable(
            f"{FILES[path].what} not found (set TOOLSHIFT_SHARED to the shared/ folder holding {path})",
            source=str(full),
        )
    return full


def read_bytes(path: str) -> tuple[Path, bytes]:
    """The file's bytes, checked against the digest of the published file (`DataUnavailable` if altered)."""
    full = locate(path)
    stat = full.stat()
    if stat.st_size > MAX_FILE_BYTES:
        raise DataUnavailable(f"{stat.st_size:,} bytes is too large for {FILES[path].what}", source=str(full))
    data = full.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != FILES[path].sha256:
        raise DataUnavailable(
            f"not the published {FILES[path].what}: SHA-256 {digest[:16]}… where {FILES[path].sha256[:16]}… "
            "was expected (altered, truncated or another version)",
            source=str(full),
        )
    return full, data


def read_json(path: str) -> Any:
    full, data = read_bytes(path)
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataUnavailable(f"not JSON: {exc}", source=str(full)) from None


def read_text(path: str) -> str:
    full, data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataUnavailable(f"not UTF-8 text: {exc}", source=str(full)) from None


def digests(paths: list[str]) -> dict[str, str]:
    return {p: FILES[p].sha256 for p in paths}


def unavailable(paths: list[str]) -> str | None:
    """Why these files cannot be read here (the first problem), or None when all are present and intact."""
    for path in paths:
        try:
            read_bytes(path)
        except DataUnavailable as exc:
            return str(exc)
    return None
