"""The Bedrock backend on a real bedrock-runtime client, stubbed by botocore's Stubber.

Stubber checks every request against the service model botocore ships, so a wrong parameter name or shape fails here
as it would against AWS.
"""

import json

import pytest
from botocore.stub import Stubber

from assist.llm.base import PermanentError, RateLimited, TransientError
from assist.llm.bedrock import BedrockBackend, to_converse
from assist.prelabel import max_tokens_for, prelabel_summary
from assist.prompts import fact_check_messages

MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0"
SOURCE = ["Riverside United beat Northgate 3-1 on Saturday.", "Tom Hale scored twice."]
SUMMARY = ["Northgate beat Riverside United.", "Tom Hale scored two goals."]
ANSWER = json.dumps([
    {"sentence": 1, "category": "relation error", "reason": "The document says Riverside won."},
    {"sentence": 2, "category": "no error", "reason": "S2 says he scored twice."},
])


def converse_response(text: str) -> dict:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 321, "outputTokens": 45, "totalTokens": 366},
        "metrics": {"latencyMs": 812},
    }


@pytest.fixture
def backend():
    backend = BedrockBackend(model_id=MODEL_ID, region="eu-west-1", timeout=5)
    with Stubber(backend.client) as stubber:
        backend.stubber = stubber
        yield backend
        stubber.assert_no_pending_responses()


def test_the_client_is_a_real_bedrock_runtime_client(backend):
    assert backend.client.meta.service_model.service_name == "bedrock-runtime"
    assert backend.client.meta.region_name == "eu-west-1"
    assert backend.client.meta.config.read_timeout == 5
    assert backend.client.meta.config.retries["total_max_attempts"] == 1  # We retry; botocore must not as well.


def test_it_sends_a_converse_request_and_reads_the_answer(backend):
    prompt = fact_check_messages(SOURCE, SUMMARY)[0]["content"]
    backend.stubber.add_response(
        "converse",
        converse_response(ANSWER),
        expected_params={
            "modelId": MODEL_ID,
            "messages": [{"role": "user", "content": [{"text": prompt}]}],
            "inferenceConfig": {"maxTokens": max_tokens_for(len(SUMMARY)), "temperature": 0.0},
        },
    )

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=0)

    assert [r.category for r in results] == ["relation", "no_error"]
    assert [r.status for r in results] == ["ok", "ok"]
    first = results[0]
    assert (first.backend, first.model, first.attempts) == ("bedrock", MODEL_ID, 1)
    assert (first.input_tokens, first.output_tokens, first.latency_ms) == (321, 45, 812)


def test_the_request_has_the_converse_shape(backend):
    messages = [
        {"role": "system", "content": "Answer in JSON."},
        {"role": "user", "content": "First part."},
        {"role": "user", "content": "Second part."},
    ]
    backend.stubber.add_response(
        "converse",
        converse_response("[]"),
        expected_params={
            "modelId": MODEL_ID,
            "messages": [{"role": "user", "content": [{"text": "First part."}, {"text": "Second part."}]}],
            "system": [{"text": "Answer in JSON."}],
            "inferenceConfig": {"maxTokens": 300, "temperature": 0.2},
        },
    )

    completion = backend.complete(messages, max_tokens=300, temperature=0.2)

    assert completion.text == "[]"
    assert completion.raw["stopReason"] == "end_turn"


def test_throttling_is_mapped_and_retried(backend, sleeps):
    backend.stubber.add_client_error(
        "converse", service_error_code="ThrottlingException", service_message="Too many tokens", http_status_code=429
    )
    backend.stubber.add_response("converse", converse_response(ANSWER))

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=2, sleep=sleeps.append)

    assert [r.status for r in results] == ["ok", "ok"]
    assert results[0].attempts == 2
    assert len(sleeps) == 1 and 1.0 <= sleeps[0] <= 1.1  # No Retry-After from Bedrock: exponential backoff.


@pytest.mark.parametrize(
    "code, status, expected",
    [
        ("ThrottlingException", 429, RateLimited),
        ("ServiceUnavailableException", 503, TransientError),
        ("InternalServerException", 500, TransientError),
        ("ModelNotReadyException", 429, RateLimited),  # Bedrock sends 429 while a model warms up.
        ("ModelTimeoutException", 408, TransientError),
        ("ValidationException", 400, PermanentError),
        ("AccessDeniedException", 403, PermanentError),
        ("ResourceNotFoundException", 404, PermanentError),
    ],
)
def test_service_errors_are_mapped(backend, code, status, expected):
    stubber = backend.stubber
    stubber.add_client_error("converse", service_error_code=code, service_message="nope", http_status_code=status)

    with pytest.raises(expected, match=code):
        backend.complete([{"role": "user", "content": "hi"}], max_tokens=10, temperature=0)


def test_a_validation_error_is_not_retried(backend, sleeps):
    backend.stubber.add_client_error(
        "converse", service_error_code="ValidationException", service_message="bad model id", http_status_code=400
    )

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=3, sleep=sleeps.append)

    assert [r.status for r in results] == ["failed", "failed"]
    assert "ValidationException" in results[0].error and "bad model id" in results[0].error
    assert sleeps == []


def test_messages_alternate_for_converse():
    turns, system = to_converse([
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ])
    assert [turn["role"] for turn in turns] == ["user", "assistant", "user"]
    assert system == []
