"""toolshift: a toolkit for tool-using LLM agents in tool ecosystems that keep changing."""

__version__ = "0.1.0"
