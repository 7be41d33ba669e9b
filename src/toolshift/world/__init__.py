"""Stateful tool worlds: domain specs compiled to SQLite and a tool surface, served over MCP."""

from toolshift.world.language.actions import register_action
from toolshift.world.state.compiler import CompiledDomain, compile_domain
from toolshift.world.state.registry import builtin_domains, load_domain
from toolshift.world.state.tools import CallResult, Tool
from toolshift.world.state.world import Snapshot, World, compose_changes
from toolshift.world.toolerror import ToolError

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
