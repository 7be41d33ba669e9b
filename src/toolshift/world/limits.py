"""The bounds a world and its MCP server enforce, in one place (docs/formats.md and docs/usage.md cite them)."""

from __future__ import annotations

# --- one call's arguments (World.validate) ---------------------------------------------------------
MAX_STRING_CHARS = 10_000
"""Longest string argument a world accepts. It also keeps every search's LIKE pattern (at most four bytes
a character) under SQLite's 50,000-byte limit on patterns."""
MAX_ARGUMENT_DEPTH = 32
"""Deepest nesting of lists and objects in a call's arguments (tool arguments are nearly flat)."""
INTEGER_BOUND = 2**63
"""SQLite keeps integers in 64 bits: an integer argument must lie in [-2^63, 2^63)."""
MAX_MESSAGE_CHARS = 1_000
"""Longest error message a tool returns: messages quote arguments, and an argument may be megabytes."""

# --- one JSON-RPC message (jsonrpc_guard) -----------------------------------------------------------
MAX_MESSAGE_DEPTH = 64
"""Deepest nesting of a message the server reads; the SDK's own parser gives up between 100 and 200."""
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""Largest message the server reads: the SDK's limit for an HTTP request body, applied to stdio lines too."""

# --- sessions over HTTP (sessions.SessionTable; `toolshift world serve` flags) ---------------------
DEFAULT_IDLE_TIMEOUT = 600.0
"""Seconds a session may go unused before it is closed and its world dropped (`--idle-timeout`)."""
DEFAULT_MAX_SESSIONS = 256
"""Live sessions (HTTP sessions plus world keys) one server holds at most (`--max-sessions`)."""
