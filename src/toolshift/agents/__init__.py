"""Agent runs: model backends, user simulators, scripted policies, the MCP agent loop and `toolshift run`."""
