"""`toolshift model serve`: a chat model (the embedded SmolLM2 by default) over the wire APIs harnesses speak."""

from __future__ import annotations

import typer

from toolshift import terminal
from toolshift.errors import BadInputError

app = typer.Typer(
    help="A model served over OpenAI chat completions, Responses and Anthropic Messages.",
    no_args_is_help=True,
)
console = terminal.console(stderr=True)


@app.command("serve")
def serve(
    model: str = typer.Option("embedded", "--model", help="embedded | openai:<name> | anthropic:<name>"),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Beyond loopback: needs a token in TOOLSHIFT_MODEL_TOKEN."
    ),
    port: int = typer.Option(8000, "--port", min=1, max=65535),
    temperature: float = typer.Option(None, "--temperature"),
    seed: int = typer.Option(0, "--seed"),
    base_url: str = typer.Option(None, "--base-url", help="The endpoint of an openai:<name> model."),
) -> None:
    """Serve MODEL at http://HOST:PORT: POST /v1/chat/completions, /v1/responses, /v1/messages (tool calls
    included, streamed or whole), GET /v1/models and /health. Point any harness or SDK at it (any API key)."""
    import os

    import uvicorn

    from toolshift.agents.config import RunConfig, check_model_spec, make_model, resolve_endpoints
    from toolshift.modelserver.server import ModelHost, model_app
    from toolshift.world.mcp.http_guard import require_token

    check_model_spec(model, role="chat")
    token = os.environ.get("TOOLSHIFT_MODEL_TOKEN") or None
    require_token(host, token, "TOOLSHIFT_MODEL_TOKEN")
    endpoints = resolve_endpoints(model, "scripted", base_url)
    if base_url and endpoints["base_url"] is None:
        raise BadInputError("--base-url is for openai:<name> models", field="base_url")
    config = RunConfig(world="serve", model=model, temperature=temperature, seed=seed, **endpoints)
    host_model = ModelHost(make_model(model, config, seed=seed), name=model)
    console.print(
        f"serving {model} at http://{host}:{port} — OpenAI base URL http://{host}:{port}/v1, "
        f"Anthropic base URL http://{host}:{port} (any API key{'' if not token else '; bearer token required'})"
    )
    uvicorn.run(model_app(host_model, bind=host, token=token), host=host, port=port, log_level="warning")
