"""A database made before the corpus models had their own app upgrades without losing a row, on SQLite and on
PostgreSQL: the move itself changes only Django's record of which app owns the tables, and a later migration renames
them after their app."""

import importlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)


def before_the_move() -> list[tuple[str, str]]:
    """The last migration of each app before the move: what corpus's first migration builds on."""
    first = importlib.import_module("corpus.migrations.0001_initial").Migration
    targets = {app: name for app, name in first.dependencies if app in {"annotation"}}
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    plan = [("annotation", targets["annotation"]), ("corpus", None)]
    # Apps that depend on corpus go back to their last migration that does not.
    graph = executor.loader.graph
    for app in ("assist", "exports"):
        nodes = [key for key in graph.forwards_plan(next(n for n in leaves if n[0] == app)) if key[0] == app]
        moved = [i for i, key in enumerate(nodes) if any(dep[0] == "corpus" for dep in graph.nodes[key].dependencies)]
        plan.append(nodes[moved[0] - 1] if moved else nodes[-1])
    return plan


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    nodes = [t for t in targets if t[1] is not None] + [("contenttypes", "0002_remove_content_type_name")]
    return executor.loader.project_state(nodes).apps


def test_it_keeps_every_row_of_an_old_database():
    old = migrate(before_the_move())
    User = old.get_model("auth", "User")
    Project = old.get_model("annotation", "Project")
    Document = old.get_model("annotation", "Document")
    Summary = old.get_model("annotation", "Summary")
    Hit = old.get_model("annotation", "Hit")
    ContentType = old.get_model("contenttypes", "ContentType")
    ContentType.objects.get_or_create(app_label="annotation", model="document")

    user = User.objects.create(username="keeper")
    project = Project.objects.create(slug="old", name="Old")
    project.memberships.create(user=user, role="manager")
    document = Document.objects.create(project=project, uid="u1", doc_id="d1", source="cnndm", domain="news",
                                       input_type="non-dialogue", length="short", text="One. Two.",
                                       text_sha256="x" * 64, word_count=2)
    document.sentences.create(index=0, text="One.")
    summary = Summary.objects.create(document=document, model="m1", text="One.", text_sha256="y" * 64)
    summary.sentences.create(index=0, text="One.")
    document.keyfacts.create(index=0, text="A fact.", origin="human", status="accepted")
    Hit.objects.create(project=project, task="fv", document=document, summary=summary, position=0)

    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    new = migrate(leaves)
    from corpus.models import Document as NewDocument
    from corpus.models import Membership
    from corpus.models import Project as NewProject

    moved = NewProject.objects.get(slug="old")
    assert Membership.objects.get(project=moved).user.username == "keeper"
    doc = NewDocument.objects.get(project=moved)
    assert [s.text for s in doc.sentences.all()] == ["One."]
    assert doc.summaries.get().sentences.get().text == "One."
    assert doc.keyfacts.get().text == "A fact."
    assert new.get_model("annotation", "Hit").objects.get().document_id == doc.pk
    assert NewDocument._meta.db_table == "corpus_document"
    from django.contrib.contenttypes.models import ContentType as CT

    assert CT.objects.get_for_model(NewDocument).app_label == "corpus"
