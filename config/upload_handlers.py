"""Django's two upload handlers, reading the request body a mebibyte at a time instead of 64 KiB.

gunicorn receives a body of known length up to 1 MiB per recv() and keeps what a read did not take in a buffer that
it copies again at every read: read 64 KiB at a time, each mebibyte was copied about sixteen times, and gunicorn's
reading took 0.10 s of a 36 MB upload's 0.13 s on the server (read a mebibyte at a time: see benchmarks/RESULTS.md,
"Import through the upload page"). The multipart parser reads in the smallest chunk any handler asks for, so both
handlers ask for the same."""

from django.core.files.uploadhandler import MemoryFileUploadHandler, TemporaryFileUploadHandler

CHUNK_BYTES = 1024 * 1024


class MemoryUpload(MemoryFileUploadHandler):
    chunk_size = CHUNK_BYTES


class DiskUpload(TemporaryFileUploadHandler):
    chunk_size = CHUNK_BYTES
