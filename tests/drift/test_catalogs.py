"""Real servers' catalogs across their published versions: installed in isolation, pinned, listed over MCP with
the official SDK, and their changes classified (D360–D362)."""

from __future__ import annotations

import json

from toolshift.drift.changes import spelling, transition
from toolshift.drift.history import VersionListing
from toolshift.drift.install import load_pins
from toolshift.drift.servers import SERVERS, published_order

from .servers import listing


def test_every_version_is_pinned_in_publishing_order_with_its_hold():
    pins = load_pins()
    for key, spec in SERVERS.items():
        assert [p.version for p in pins.servers[key].versions] == list(spec.versions)
    fs = SERVERS["filesystem"].versions
    assert (
        fs.index("0.6.2")
        < fs.index("2025.1.14")
        < fs.index("2026.8.31")
        < fs.index("2.0.1")
        < fs.index("2.3.0")
    )
    assert published_order("2.3.0 2025.1.14 0.6.2") == ("0.6.2", "2025.1.14", "2.3.0")
    held = {p.version: p.hold for p in pins.servers["filesystem"].versions}
    assert held["2025.7.1"] == {"zod": "^3.25.0"} and held["2026.8.31"] == {}
    git = {p.version: p.hold for p in pins.servers["git"].versions}
    assert git["0.6.2"] == {"mcp": "<2"} and git["2026.10.19"] == {}


def test_the_filesystem_server_deprecates_read_file_for_read_text_file():
    old = listing("filesystem", "0.6.2")
    new = listing("filesystem", "2026.8.31")
    assert len(old.tools) == 9 and "read_text_file" not in old.names()
    assert len(new.tools) == 14 and {"read_text_file", "read_media_file", "edit_file"} <= set(new.names())
    assert all(
        t["inputSchema"].get("type") == "object" and "properties" in t["inputSchema"] for t in old.tools
    )
    t = transition("filesystem", old, new)
    assert sorted(t.added) == sorted(set(new.names()) - set(old.names())) and t.retired == []
    events = dict((kind, what) for kind, what in t.events if kind in ("deprecated_successor", "overlap"))
    assert events["deprecated_successor"] == "read_file → read_text_file"
    assert events["overlap"] == "read_text_file beside read_file"


def test_a_python_server_runs_on_the_sdk_major_it_was_written_for():
    old = listing("git", "0.6.2")
    new = listing("git", "2026.10.19")
    assert old.server_name == new.server_name == "mcp-git"
    assert "git_create_branch" in old.names() and len(old.tools) == 8
    assert {"git_checkout", "git_branch"} <= set(new.names()) and "git_init" not in new.names()


def _tool(name: str, props: dict, required: list[str], description: str = "") -> dict:
    return {"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": props, "required": required}}  # fmt: skip


def test_changes_are_classified_from_names_schemas_and_descriptions():
    s = {"type": "string"}
    old = VersionListing(version="1", integrity="", tools=[
        _tool("read-query", {"query": s}, ["query"]), _tool("git_status", {"repo_path": s}, ["repo_path"]),
        _tool("git_list_tags", {"repo_path": s}, ["repo_path"]), _tool("write_file", {"path": s}, ["path"]),
    ])  # fmt: skip
    new = VersionListing(version="2", integrity="", tools=[
        _tool("read_query", {"query": s}, ["query"]), _tool("git_status", {"repo_path": s}, ["repo_path"]),
        _tool("write_file", {"path": s, "mode": {"type": "string", "default": "w"}}, ["path"]),
        _tool("git_log", {"repo_path": s}, ["repo_path"]),
    ])  # fmt: skip
    t = transition("x", old, new)
    kinds = [k for k, _ in t.events]
    assert ("rename", "read-query → read_query (spelling and schema)") in t.events
    assert "param_added_optional" in kinds and "merge" not in kinds
    assert ("retired", "git_list_tags") in t.events and (
        "new",
        "git_log",
    ) in t.events  # no merge by repo_path
    assert spelling("getResourceReference") == spelling("get-resource-reference") == "get_resource_reference"
    assert json.loads(json.dumps(t.counts()))["rename"] == 1
