"""Any server speaking OpenAI's chat-completions protocol: OpenAI itself, vLLM, Ollama, llama.cpp's server.

The base URL includes the API prefix, as the OpenAI SDK expects ("https://api.openai.com/v1",
"http://127.0.0.1:11434/v1"); requests go to {base_url}/chat/completions. Only the fields every such server accepts
are sent (model, messages, max_tokens, temperature).
"""

import email.utils
import time
from datetime import UTC, datetime
from typing import Any

import httpx

from assist.config import DEFAULTS

from .base import ChatBackend, Completion, Message, PermanentError, RateLimited, TransientError


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header: either a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


def _excerpt(response: httpx.Response) -> str:
    """The server's own error message when it sent one, else the start of the body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str):
            return error[:300]
    return response.text[:300]


class OpenAICompatibleBackend(ChatBackend):
    name = "openai"
    label = "OpenAI-compatible API"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = DEFAULTS.llm_timeout,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not model:
            raise ValueError("The OpenAI-compatible backend needs a model name (FINEGRAIN_OPENAI_MODEL)")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        headers = {"Accept": "application/json"}
        if api_key:  # Local servers (Ollama, llama.cpp) need none; sending an empty bearer confuses some proxies.
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout), transport=transport)

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def complete(self, messages: list[Message], *, max_tokens: int, temperature: float) -> Completion:
        payload = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        started = time.monotonic()
        try:
            response = self._client.post(self.endpoint, json=payload)
        except httpx.TimeoutException as error:
            message = f"No answer from {self.endpoint} within {self.timeout:g}s ({type(error).__name__})"
            raise TransientError(message) from error
        except httpx.TransportError as error:
            raise TransientError(f"Cannot reach {self.endpoint}: {type(error).__name__}: {error}") from error
        latency_ms = round((time.monotonic() - started) * 1000)

        status = response.status_code
        if status == 429:
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            raise RateLimited(f"HTTP 429 from {self.endpoint}: {_excerpt(response)}", retry_after=retry_after)
        if status >= 500 or status == 408:
            raise TransientError(f"HTTP {status} from {self.endpoint}: {_excerpt(response)}")
        if status >= 400:
            raise PermanentError(f"HTTP {status} from {self.endpoint}: {_excerpt(response)}")
        return self._completion(response, latency_ms)

    def _completion(self, response: httpx.Response, latency_ms: int) -> Completion:
        try:
            body: dict[str, Any] = response.json()
            message = body["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError) as error:
            # A 200 without a usable body is a server or proxy hiccup more often than a bad request.
            message = f"Malformed chat-completions response from {self.endpoint}: {response.text[:200]!r}"
            raise TransientError(message) from error
        usage = body.get("usage") or {}
        return Completion(
            text=message.get("content") or "",
            model=str(body.get("model") or self.model),
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            latency_ms=latency_ms,
            raw=body,
        )

    def close(self) -> None:
        self._client.close()
