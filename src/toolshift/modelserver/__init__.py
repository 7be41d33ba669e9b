"""A model served over the wire APIs harnesses speak (OpenAI chat completions, Responses, Anthropic Messages)."""

from toolshift.modelserver.server import ModelCall, ModelHost, model_app, serving

__all__ = ["ModelCall", "ModelHost", "model_app", "serving"]
