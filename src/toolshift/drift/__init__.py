"""Real drift: real MCP servers' published histories as an evolving ecosystem, with Steward kept in step."""
