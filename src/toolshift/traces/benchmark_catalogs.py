"""BFCL's and AgentDojo's tool catalogs from the benchmarks' own function docs, not from the calls a run made.

A catalog built from the calls seen differs between two models' runs of the same benchmark (each calls a
different subset, and makes up different names), so a flow learned on one model's run refused another's.
Here a catalog's tools are the benchmark's own: BFCL's multi-turn function docs
(`bfcl_eval/data/multi_turn_func_doc/*.json`, the eight classes of the multi-turn categories) and an
AgentDojo suite's registered functions (`get_suite(version, suite).tools`). Names a run called that the
benchmark does not define (a model's `cat<|channel|>commentary`) are added `exists: false`, `neither`,
which `Catalog.fingerprint` leaves out (D62), so both runs' catalogs have one identity.

Effects follow the worlds' rules for the same tools (`toolshift.world.external`; a test checks they agree):
BFCL by the method's leading word, every MathAPI method a read; AgentDojo `get/search/read/list/check` read.

bfcl-eval and agentdojo are extras (`toolshift[bfcl]`, `toolshift[agentdojo]`). Without them these return
None and the converters fall back to a catalog of the calls seen, saying so in the catalog's `source` and in
the conversion's notes (flows then refuse another model's run, as before).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError
from toolshift.fileio import loads_json, read_text
from toolshift.models import Effect
from toolshift.traces.catalog import CatalogTool, ToolCatalog

BFCL_PACKAGE = "bfcl_eval"
BFCL_CLASSES = ("GorillaFileSystem", "MathAPI", "MessageAPI", "TwitterAPI", "TicketAPI", "TradingBot",
                "TravelAPI", "VehicleControlAPI")  # fmt: skip
"""The classes of BFCL's multi-turn categories (the agentic ones add web search and memory, in other files)."""
BFCL_READ_VERBS = (
    "get", "list", "view", "search", "find", "check", "display", "estimate", "filter", "compute", "retrieve",
    "cat", "ls", "pwd", "grep", "wc", "tail", "du", "diff", "sort", "gallon", "liter", "message_get",
    "posting_get", "ticket_get", "trading_get", "travel_get", "verify",
)  # fmt: skip
"""As `toolshift.world.external.bfcl.READ_VERBS` (traces never imports the world room; a test compares)."""
AGENTDOJO_PACKAGE = "agentdojo"
AGENTDOJO_READ_VERBS = ("get", "search", "read", "list", "check")
AGENTDOJO_NEWEST = "v1.2.2"
"""The newest suite version agentdojo 0.1.35 ships: used for a log whose version the package does not know."""
MAX_DOC_BYTES = 16 * 1024 * 1024


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def bfcl_available() -> bool:
    return importlib.util.find_spec(BFCL_PACKAGE) is not None


def _bfcl_effect(name: str, stateless: bool) -> Effect:
    lowered = name.lower()
    if stateless or any(lowered == v or lowered.startswith(v + "_") for v in BFCL_READ_VERBS):
        return "read"
    return "write"


@functools.cache
def bfcl_functions() -> tuple[tuple[str, Effect, str], ...]:
    """(name, effect, class) of every function BFCL's multi-turn function docs define, in file order."""
    from bfcl_eval.constants.executable_backend_config import (
        MULTI_TURN_FUNC_DOC_FILE_MAPPING,
        STATELESS_CLASSES,
    )

    spec = importlib.util.find_spec(BFCL_PACKAGE)
    assert spec is not None and spec.origin is not None
    folder = Path(spec.origin).parent / "data" / "multi_turn_func_doc"
    out: list[tuple[str, Effect, str]] = []
    for class_name in BFCL_CLASSES:
        path = folder / MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
        text = read_text(path, what="BFCL function doc", max_bytes=MAX_DOC_BYTES)
        for number, line in enumerate(text.splitlines()):
            if not line.strip():
                continue
            doc = loads_json(line, source=str(path), record=number)
            if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
                raise BadInputError("a function doc needs a string `name`", source=str(path), record=number)
            out.append((doc["name"], _bfcl_effect(doc["name"], class_name in STATELESS_CLASSES), class_name))
    return tuple(out)


def _with_made_up(catalog: ToolCatalog, called: Iterable[str], note: str) -> ToolCatalog:
    known = catalog.effects()
    made_up = [
        CatalogTool(name=n, effect="neither", origin="source", exists=False, note=note)
        for n in sorted(set(called))
        if n not in known
    ]
    return catalog.merged(made_up)


def bfcl_catalog(domain: str, called: Iterable[str]) -> ToolCatalog | None:
    """BFCL's 128 multi-turn functions with their effects, plus the names a run made up; None without bfcl-eval."""
    if not bfcl_available():
        return None
    tools = [
        CatalogTool(name=name, effect=effect, origin="source", note=f"BFCL {cls} function doc")
        for name, effect, cls in bfcl_functions()
    ]
    catalog = ToolCatalog(
        domain=domain,
        tools=sorted(tools, key=lambda t: t.name),
        source=f"bfcl-eval {_version('bfcl-eval')} multi_turn_func_doc",
        results="python",
    )
    return _with_made_up(catalog, called, "not a BFCL function: BFCL's executor fails the call")


def agentdojo_available() -> bool:
    return importlib.util.find_spec(AGENTDOJO_PACKAGE) is not None


@functools.cache
def agentdojo_functions(suite: str, version: str) -> tuple[tuple[str, ...], str] | None:
    """(the suite's function names, the suite version read) — the log's version if agentdojo knows it."""
    from agentdojo.task_suite.load_suites import get_suites

    for v in (version, AGENTDOJO_NEWEST):
        suites: dict[str, Any] = dict(get_suites(v))
        if suite in suites:
            return tuple(sorted(f.name for f in suites[suite].tools)), v
    return None


def agentdojo_catalog(domain: str, suite: str, version: str, called: Iterable[str]) -> ToolCatalog | None:
    """An AgentDojo suite's functions, plus the names a log made up; None without agentdojo or the suite."""
    if not agentdojo_available():
        return None
    catalog = _agentdojo_suite_catalog(domain, suite, version)
    if catalog is None:
        return None
    return _with_made_up(catalog, called, f"not an AgentDojo {suite} function: its runtime refuses the call")


@functools.cache
def _agentdojo_suite_catalog(domain: str, suite: str, version: str) -> ToolCatalog | None:
    """The suite's own functions as a catalog, built once per (domain, suite, version): every log of a suite
    shares it (`_with_made_up` copies it before adding a log's made-up names)."""
    found = agentdojo_functions(suite, version)
    if found is None:
        return None
    names, read_version = found
    tools = [
        CatalogTool(
            name=n,
            effect="read" if n.split("_", 1)[0] in AGENTDOJO_READ_VERBS else "write",
            origin="source",
            note=f"AgentDojo {suite} suite function",
        )
        for n in names
    ]
    return ToolCatalog(
        domain=domain,
        tools=tools,
        source=f"agentdojo {_version('agentdojo')} suite {suite} {read_version}",
        results="yaml",
    )
