"""Stateful tool worlds: domain specs compiled to SQLite and a tool surface, served over MCP."""

from toolshift.world.actions import register_action
from toolshift.world.compiler import CompiledDomain, compile_domain
from toolshift.world.registry import builtin_domains, load_domain
from toolshift.world.tools import CallResult, Tool, ToolError
from toolshift.world.world import Snapshot, World, compose_changes

__all__ = [
    "CallResult",
    "CompiledDomain",
    "Snapshot",
    "Tool",
    "ToolError",
    "World",
    "builtin_domains",
    "compile_domain",
    "compose_changes",
    "load_domain",
    "register_action",
]
