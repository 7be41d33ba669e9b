"""Stateful tool worlds: domain specs compiled to SQLite and a tool surface, served over MCP."""
