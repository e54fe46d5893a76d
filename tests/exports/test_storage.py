"""S3 upload, replayed with botocore's Stubber: parameters are validated against the S3 service model."""

import boto3
import pytest
from botocore.stub import ANY, Stubber

from exports.storage import StorageError, parse_s3_url, upload


@pytest.fixture
def s3():
    client = boto3.client("s3", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test")
    with Stubber(client) as stubber:
        yield client, stubber


def test_it_puts_the_file_under_the_prefix(s3, tmp_path):
    client, stubber = s3
    path = tmp_path / "bench.jsonl"
    path.write_text('{"uid": "1"}\n')
    stubber.add_response("put_object", {"ETag": '"abc"'}, {
        "Bucket": "releases", "Key": "finegrain/alpha/bench.jsonl", "Body": ANY, "ContentType": "application/x-ndjson"})
    assert upload(path, "s3://releases/finegrain/alpha", s3=client) == "s3://releases/finegrain/alpha/bench.jsonl"
    stubber.assert_no_pending_responses()


def test_a_service_error_is_reported(s3, tmp_path):
    client, stubber = s3
    path = tmp_path / "bench.card.md"
    path.write_text("# card\n")
    stubber.add_client_error("put_object", service_error_code="NoSuchBucket", http_status_code=404)
    with pytest.raises(StorageError, match="NoSuchBucket"):
        upload(path, "s3://missing/x", s3=client)


def test_a_bad_url_is_refused():
    with pytest.raises(StorageError):
        parse_s3_url("https://bucket/key")
    assert parse_s3_url("s3://bucket") == ("bucket", "")
