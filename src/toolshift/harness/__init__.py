"""Agents that own their loop on toolshift's tasks: Python agents, agent SDKs and harness CLIs from spec files."""
