"""Catalog tools for Steward's unit tests: string arguments, the domain the name's prefix."""

from __future__ import annotations

from toolshift.steward.catalog import CatalogTool


def string_tool(name: str, props: list[str], effect: str, required: list[str], text: str = "") -> CatalogTool:
    """A tool of the domain its name starts with (`rec_search_candidates` → rec) whose arguments are strings;
    its description `text`, or its name in words."""
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in props}, "required": required}
    return CatalogTool(name, name.split("_")[0], text or name.replace("_", " "), schema, effect)
