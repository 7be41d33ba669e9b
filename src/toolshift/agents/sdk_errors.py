"""Errors of the openai and anthropic SDKs (one generated hierarchy) as retryable, configuration or model errors."""

from __future__ import annotations

from collections.abc import Awaitable
from types import ModuleType
from typing import Any, TypeVar

from toolshift.agents.chat import ModelConfigError, ModelError, RetryableModelError

T = TypeVar("T")

RETRY_STATUS = (408, 409, 425, 429, 529)
"""Statuses worth retrying besides 5xx: timeout, conflict, too early, rate limit, overloaded."""


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    after = response.headers.get("retry-after") if response is not None else None
    try:
        return float(after) if after is not None else None
    except ValueError:
        return None


def classify(sdk: ModuleType, exc: Exception, *, where: str, model: str, route: str = "") -> Exception:
    """The model error for an SDK exception; `route` names what else a 404 may mean (e.g. the endpoint path)."""
    if isinstance(exc, sdk.RateLimitError):
        return RetryableModelError(
            f"rate limited by {where}", rate_limited=True, retry_after=_retry_after(exc)
        )
    if isinstance(exc, sdk.APITimeoutError):
        return RetryableModelError(f"request to {where} timed out")
    if isinstance(exc, sdk.APIConnectionError):
        return RetryableModelError(f"cannot reach {where}: {exc.__cause__ or exc}")
    if isinstance(exc, sdk.AuthenticationError | sdk.PermissionDeniedError):
        return ModelConfigError(f"{where} refused the API key: {exc.message}")
    if isinstance(exc, sdk.NotFoundError):
        return ModelConfigError(f"model {model!r}{route} not found at {where}: {exc.message}")
    if isinstance(exc, sdk.APIStatusError):
        if exc.status_code in RETRY_STATUS or exc.status_code >= 500:
            return RetryableModelError(f"{where} answered {exc.status_code}: {exc.message}")
        if "model" in str(exc.message).lower() and exc.status_code in (400, 422):
            return ModelConfigError(f"{where} rejected model {model!r}: {exc.message}")
        return ModelError(f"{where} answered {exc.status_code}: {exc.message}")
    return exc


async def send(
    sdk: ModuleType, request: Awaitable[T], *, reached: bool, where: str, model: str, route: str = ""
) -> T:
    """Await one SDK request, its errors classified. Before any request has `reached` the endpoint, a refused
    connection is a configuration error (a wrong URL), not a transient one worth retrying."""
    try:
        return await request
    except sdk.APIConnectionError as exc:
        if not reached and not isinstance(exc, sdk.APITimeoutError):
            raise ModelConfigError(
                f"cannot reach the model endpoint {where}: {exc.__cause__ or exc}"
            ) from exc
        raise classify(sdk, exc, where=where, model=model, route=route) from exc
    except sdk.APIError as exc:
        raise classify(sdk, exc, where=where, model=model, route=route) from exc
