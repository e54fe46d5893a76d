"""Amazon Bedrock through the Runtime `converse` API, which speaks one message format for every model it hosts.

Credentials come from boto3's usual chain (environment, profile, instance role); this module never reads them.
botocore's own retries are switched off: assist.llm.base retries, and two retry loops would multiply the waits.
"""

import time
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError

from assist.config import DEFAULTS

from .base import ChatBackend, Completion, Message, PermanentError, RateLimited, TransientError

THROTTLING_CODES = {"ThrottlingException", "TooManyRequestsException", "ServiceQuotaExceededException"}
TRANSIENT_CODES = {
    "InternalServerException",
    "ServiceUnavailableException",
    "ModelNotReadyException",
    "ModelTimeoutException",
    "ModelErrorException",
}


def make_client(region: str, timeout: float) -> Any:
    """A bedrock-runtime client with our timeout and without botocore's retries."""
    config = Config(
        region_name=region,
        connect_timeout=min(timeout, 10.0),
        read_timeout=timeout,
        retries={"total_max_attempts": 1, "mode": "standard"},
    )
    return boto3.session.Session().client("bedrock-runtime", config=config)


def to_converse(messages: list[Message]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Chat messages as converse wants them: system text apart, user/assistant turns alternating."""
    system = [{"text": m["content"]} for m in messages if m["role"] == "system"]
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] == "system":
            continue
        if turns and turns[-1]["role"] == message["role"]:
            turns[-1]["content"].append({"text": message["content"]})  # Merge: converse rejects two in a row.
        else:
            turns.append({"role": message["role"], "content": [{"text": message["content"]}]})
    return turns, system


class BedrockBackend(ChatBackend):
    name = "bedrock"
    label = "Amazon Bedrock"

    def __init__(
        self, *, model_id: str, region: str, timeout: float = DEFAULTS.llm_timeout, client: Any = None
    ) -> None:
        if not model_id:
            raise ValueError("The Bedrock backend needs a model id (FINEGRAIN_BEDROCK_MODEL_ID)")
        self.model = model_id
        self.region = region
        self.timeout = timeout
        self.client = client if client is not None else make_client(region, timeout)

    def complete(self, messages: list[Message], *, max_tokens: int, temperature: float) -> Completion:
        turns, system = to_converse(messages)
        request: dict[str, Any] = {
            "modelId": self.model,
            "messages": turns,
            "inferenceConfig": {"maxTokens": max_tokens, "temperature": temperature},
        }
        if system:
            request["system"] = system
        started = time.monotonic()
        try:
            response = self.client.converse(**request)
        except ClientError as error:
            raise self._map_client_error(error) from error
        except ReadTimeoutError as error:
            raise TransientError(f"Bedrock did not answer within {self.timeout:g}s") from error
        except (NoCredentialsError, PartialCredentialsError) as error:
            raise PermanentError(f"No usable AWS credentials for Bedrock: {error}") from error
        except (BotoConnectionError, HTTPClientError) as error:
            raise TransientError(f"Cannot reach Bedrock in {self.region}: {error}") from error
        except BotoCoreError as error:
            raise PermanentError(f"Bedrock request failed: {type(error).__name__}: {error}") from error
        elapsed_ms = round((time.monotonic() - started) * 1000)
        return self._completion(response, elapsed_ms)

    def _map_client_error(self, error: ClientError) -> Exception:
        details = error.response.get("Error", {})
        code = details.get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        message = f"Bedrock {code or 'error'} (HTTP {status}): {details.get('Message', '')}".rstrip(": ")
        if code in THROTTLING_CODES or status == 429:
            return RateLimited(message, retry_after=None)  # Bedrock sends no Retry-After: back off exponentially.
        if code in TRANSIENT_CODES or status >= 500:
            return TransientError(message)
        return PermanentError(message)

    def _completion(self, response: dict[str, Any], elapsed_ms: int) -> Completion:
        try:
            blocks = response["output"]["message"]["content"]
        except (KeyError, TypeError) as error:
            stop = response.get("stopReason")
            raise TransientError(f"Malformed converse response: no output message (stop reason {stop})") from error
        text = "".join(block.get("text", "") for block in blocks if isinstance(block, dict))
        usage = response.get("usage") or {}
        metrics = response.get("metrics") or {}
        return Completion(
            text=text,
            model=self.model,
            input_tokens=usage.get("inputTokens"),
            output_tokens=usage.get("outputTokens"),
            latency_ms=int(metrics.get("latencyMs") or elapsed_ms),
            raw={key: value for key, value in response.items() if key != "ResponseMetadata"},
        )
