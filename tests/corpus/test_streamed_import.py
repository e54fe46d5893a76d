"""The dataset import reads its file as a stream: the same stored rows as the import that read the file whole, the
same all-or-nothing rule and problems by line, and never more than a piece of the file at a time."""

import csv
import hashlib
import io
import json
from pathlib import Path

import pytest
from django.urls import reverse

from benchmarks.synthetic import write
from corpus import importing
from corpus.importing import DatasetError, import_dataset
from corpus.models import Document, DocumentSentence, Job, KeyFact, Project, Summary, SummarySentence

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"

# What the import stored before it read files as streams (commit 7191c70, which read the whole file), as a digest of
# every stored row: the synthetic UniSumEval-like file (seed 7, scale 0.04: 9 documents, 81 summaries, 1.5 MB) in
# JSONL and in CSV, and the small fixture in either format.
STORED_BEFORE = {
    "synthetic": "a0a22ac3e4d8a9a6c2e904ee7e58c1f3bfbdd6b07a3024bf5d14300eec6926c0",
    "small": "7744159eb475c813b7f4d7b1582fb15678b95ba0f8229eb177357c98c93d7441",
}
CSV_FIELDS = ["uid", "doc_id", "source", "domain", "length", "input_type", "redact_type", "model", "reference",
              "document", "summary", "sentences", "pred_keyfact", "keyfact"]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    return write(tmp_path_factory.mktemp("synthetic") / "synthetic.jsonl", seed=7, scale=0.04)


def as_csv(source: Path, target: Path) -> Path:
    """The same rows as CSV (list fields as JSON arrays; rows end in CRLF, documents hold line feeds)."""
    with source.open(encoding="utf-8") as rows, target.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(CSV_FIELDS)
        for line in rows:
            row = json.loads(line)
            writer.writerow([json.dumps(row[name]) if isinstance(row.get(name), list) else row.get(name, "")
                             for name in CSV_FIELDS])
    return target


def stored_digest(project: Project) -> str:
    digest = hashlib.sha256()
    for rows in (
        Document.objects.filter(project=project).order_by("uid").values_list(
            "uid", "doc_id", "source", "domain", "input_type", "length", "redact_type", "text", "reference",
            "word_count", "text_sha256"),
        Summary.objects.filter(document__project=project).order_by("document__uid", "model").values_list(
            "document__uid", "model", "text", "text_sha256"),
        DocumentSentence.objects.filter(document__project=project).order_by("document__uid", "index").values_list(
            "document__uid", "index", "text", "turn", "speaker"),
        SummarySentence.objects.filter(summary__document__project=project).order_by(
            "summary__document__uid", "summary__model", "index").values_list(
            "summary__document__uid", "summary__model", "index", "text"),
        KeyFact.objects.filter(document__project=project).order_by("document__uid", "index").values_list(
            "document__uid", "index", "text", "origin", "status"),
    ):
        for row in rows:
            digest.update(repr(row).encode())
    return digest.hexdigest()


def nothing_stored() -> bool:
    return not any(model.objects.exists() for model in (Document, DocumentSentence, Summary, SummarySentence,
                                                           KeyFact))


class PieceByPiece(io.RawIOBase):
    """A file that gives at most `limit` bytes a read and refuses to be read whole (read() or read(-1)), to seek or
    to say its size: what an import may ask of a stream."""

    def __init__(self, data: bytes, limit: int):
        self.data, self.limit, self.position, self.largest = data, limit, 0, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > self.limit:
            raise AssertionError(f"asked for {size} bytes at once")
        self.largest = max(self.largest, size)
        piece = self.data[self.position:self.position + size]
        self.position += len(piece)
        return piece

    def readinto(self, buffer) -> int:
        raise AssertionError("read through a buffer")

    def seekable(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("no file descriptor")


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("processes", [1, 2])
def test_a_file_read_in_small_pieces_stores_what_the_whole_file_did(synthetic, tmp_path, settings, monkeypatch,
                                                                   fmt, processes):
    from corpus import segmentation

    path = synthetic if fmt == "jsonl" else as_csv(synthetic, tmp_path / "synthetic.csv")
    # Pieces of an odd size cut lines, CRLFs and multi-byte characters anywhere; two documents written at a time.
    monkeypatch.setattr(importing, "CHUNK_BYTES", 997)
    monkeypatch.setattr(importing, "WRITE_DOCUMENTS", 2)
    monkeypatch.setattr(segmentation, "PARALLEL_FROM_CHARS", 0)
    settings.FINEGRAIN_SEGMENT_PROCESSES = processes
    project = Project.objects.create(slug="streamed", name="streamed")
    result = import_dataset(project=project, data=path, filename=path.name)
    assert (result.documents_created, result.summaries_created) == (9, 81)
    assert stored_digest(project) == STORED_BEFORE["synthetic"]
    with path.open("rb") as file:  # re-importing the same file changes nothing
        assert not import_dataset(project=project, data=file, filename=path.name).changed
    assert stored_digest(project) == STORED_BEFORE["synthetic"]


@pytest.mark.parametrize("name", ["small.jsonl", "small.csv"])
def test_the_small_fixtures_store_what_they_did_from_bytes_a_path_and_a_file(name, monkeypatch):
    monkeypatch.setattr(importing, "CHUNK_BYTES", 5)
    path = FIXTURES / name
    for slug, data in (("from-bytes", path.read_bytes()), ("from-path", path), ("from-file", path.open("rb"))):
        project = Project.objects.create(slug=slug, name=slug)
        import_dataset(project=project, data=data, filename=name)
        assert stored_digest(project) == STORED_BEFORE["small"], slug


def test_the_import_reads_a_stream_a_piece_at_a_time_never_whole(synthetic):
    data = synthetic.read_bytes()
    assert len(data) > 1.4 * importing.CHUNK_BYTES
    stream = PieceByPiece(data, limit=importing.CHUNK_BYTES)
    project = Project.objects.create(slug="pieces", name="pieces")
    import_dataset(project=project, data=stream, filename="synthetic.jsonl")
    assert stream.position == len(data) and stream.largest == importing.CHUNK_BYTES
    assert stored_digest(project) == STORED_BEFORE["synthetic"]


def test_a_stream_that_cannot_tell_its_size_is_stopped_at_the_limit(synthetic, settings):
    settings.FINEGRAIN_MAX_UPLOAD_BYTES = importing.CHUNK_BYTES  # the file is larger
    project = Project.objects.create(slug="limit", name="limit")
    with pytest.raises(DatasetError) as refused:
        import_dataset(project=project, data=PieceByPiece(synthetic.read_bytes(), importing.CHUNK_BYTES),
                       filename="synthetic.jsonl")
    assert [str(error) for error in refused.value.errors] == [
        f"file: the file is over {importing.CHUNK_BYTES:,} bytes, the limit"]
    assert nothing_stored()


@pytest.mark.parametrize("mistake", ["bad row", "invalid UTF-8"])
def test_a_mistake_on_the_last_line_of_a_large_file_writes_nothing_and_names_the_line(
        synthetic, tmp_path, settings, monkeypatch, mistake):
    from corpus import segmentation

    monkeypatch.setattr(segmentation, "PARALLEL_FROM_CHARS", 0)
    settings.FINEGRAIN_SEGMENT_PROCESSES = 2  # the rows before it were already being split in the workers
    lines = synthetic.read_bytes().splitlines(keepends=True)
    last = json.loads(lines[-1])
    if mistake == "bad row":
        last["model"] = "a new model"
        last["document"] += " One more sentence."
        tail = json.dumps(last).encode() + b"\n"
        expected = f"line {len(lines)}, field 'document': differs from line {len(lines) - 8} for the same uid " \
                   f"'{last['uid']}'"
    else:
        tail = lines[-1].replace(b'"uid": "', b'"uid": "caf\xe9', 1)
        expected = f"line {len(lines)}: invalid UTF-8 at byte"
    path = tmp_path / "late.jsonl"
    path.write_bytes(b"".join(lines[:-1]) + tail)
    project = Project.objects.create(slug="late", name="late")
    with pytest.raises(DatasetError) as refused:
        import_dataset(project=project, data=path, filename=path.name)
    assert [str(error) for error in refused.value.errors if str(error).startswith(expected)]
    assert len(refused.value.errors) == 1
    assert nothing_stored()


def test_the_job_reads_its_upload_a_piece_at_a_time(synthetic, project, manager, client, settings, tmp_path,
                                                     monkeypatch, django_capture_on_commit_callbacks):
    """The upload is written to disk (past FILE_UPLOAD_MAX_MEMORY_SIZE Django streams it to a temporary file), and
    the job's task body hands the import the open file, which it reads a piece at a time."""
    from corpus import uploads

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
    asked = []
    real_import = uploads.import_dataset

    class Watched:
        def __init__(self, file):
            self.file = file

        def read(self, size=-1):
            asked.append(size)
            return self.file.read(size)

        def __getattr__(self, name):
            return getattr(self.file, name)

    def watched(*, data, **kwargs):
        assert not isinstance(data, bytes)
        return real_import(data=Watched(data), **kwargs)

    monkeypatch.setattr(uploads, "import_dataset", watched)
    client.force_login(manager)
    with synthetic.open("rb") as upload, django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("import_upload", args=["alpha"]), {"file": upload})
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.status == Job.Status.DONE, job.error
    assert asked and all(0 < size <= importing.CHUNK_BYTES for size in asked)
    assert stored_digest(project) == STORED_BEFORE["synthetic"]
    assert not list((tmp_path / "media").rglob("*.jsonl"))  # the upload is deleted once imported


def test_an_upload_over_the_operators_limit_is_refused_and_nothing_is_kept(synthetic, project, manager, client,
                                                                           settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.FINEGRAIN_MAX_UPLOAD_BYTES = 100_000
    client.force_login(manager)
    with synthetic.open("rb") as upload:
        response = client.post(reverse("import_upload", args=["alpha"]), {"file": upload})
    html = response.content.decode()
    assert response.status_code == 200
    assert (f"The file is {synthetic.stat().st_size:,} bytes; this site takes files up to 100,000 bytes, a limit "
            "its operators set. Nothing was saved.") in html
    assert not Job.objects.exists() and not (tmp_path / "media").exists()
    assert nothing_stored()
    small = FIXTURES / "small.jsonl"  # under the limit: taken
    with small.open("rb") as upload:
        assert client.post(reverse("import_upload", args=["alpha"]), {"file": upload}).status_code == 302
    assert Job.objects.count() == 1
