"""A world's state and tools: SQLite tables from a spec, compiled tools, snapshots and diffs, the registry of domains."""
