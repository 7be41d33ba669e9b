"""Serving a world over MCP: stdio, streamable HTTP and in-memory sessions, and the doors every HTTP server shares."""
