"""Flows: learn an agent's read-only lookups from its runs, decide them ahead of it, and replay what they save."""
