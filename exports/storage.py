"""Where finished exports may also go: S3 (or any S3-compatible store). The only module that imports boto3.

Settings (environment): FINEGRAIN_EXPORT_S3_BUCKET (when set, the export job uploads every file it writes),
FINEGRAIN_EXPORT_S3_PREFIX, FINEGRAIN_EXPORT_S3_REGION, FINEGRAIN_EXPORT_S3_ENDPOINT_URL. Credentials come
from boto3's usual chain (environment, instance profile), never from finegrain's settings.
"""

from pathlib import Path
from urllib.parse import urlparse

from django.conf import settings

CONTENT_TYPES = {".jsonl": "application/x-ndjson", ".json": "application/json", ".csv": "text/csv",
                 ".parquet": "application/vnd.apache.parquet", ".md": "text/markdown; charset=utf-8"}


class StorageError(Exception):
    pass


def parse_s3_url(url: str) -> tuple[str, str]:
    """s3://bucket/prefix -> (bucket, prefix); the prefix may be empty."""
    parsed = urlparse(url)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise StorageError(f"--s3 must look like s3://bucket/key-prefix, got {url!r}")
    return parsed.netloc, parsed.path.lstrip("/")


def configured_url() -> str | None:
    bucket = getattr(settings, "FINEGRAIN_EXPORT_S3_BUCKET", "")
    if not bucket:
        return None
    return f"s3://{bucket}/{getattr(settings, 'FINEGRAIN_EXPORT_S3_PREFIX', '').strip('/')}"


def client():
    import boto3

    return boto3.client("s3", region_name=getattr(settings, "FINEGRAIN_EXPORT_S3_REGION", None) or None,
                        endpoint_url=getattr(settings, "FINEGRAIN_EXPORT_S3_ENDPOINT_URL", None) or None)


def upload(path: Path, url: str, *, s3=None) -> str:
    """Put one file under the URL's prefix (a prefix ending in a file name of its own is used as the key)."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, prefix = parse_s3_url(url)
    path = Path(path)
    key = f"{prefix.rstrip('/')}/{path.name}" if prefix else path.name
    s3 = s3 or client()
    try:
        with path.open("rb") as body:
            s3.put_object(Bucket=bucket, Key=key, Body=body,
                          ContentType=CONTENT_TYPES.get(path.suffix, "application/octet-stream"))
    except (BotoCoreError, ClientError) as exc:
        raise StorageError(f"upload of {path.name} to s3://{bucket}/{key} failed: {exc}") from None
    return f"s3://{bucket}/{key}"
