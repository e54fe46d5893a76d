"""REST API (read side of the corpus). Access goes through annotation.permissions, as for the pages.

The corpus is the managers' (annotation.permissions: set beside a HIT's units it would tell the attention checks
apart). An annotator reads only the documents of the HITs it may read, and of them only what the HIT page shows:
the numbered sentences, with their speaker turns.
"""

from django.db.models import QuerySet
from rest_framework import mixins, serializers, viewsets

from corpus.models import Document, DocumentSentence, KeyFact, Project, Summary, SummarySentence

from ..permissions import (
    documents_visible_to,
    keyfacts_visible_to,
    managed_projects,
    projects_visible_to,
    summaries_visible_to,
)
from ..serializers import BuiltOnce


class ProjectSerializer(BuiltOnce):
    class Meta:
        model = Project
        fields = [
            "id", "slug", "name", "description", "annotators_per_unit", "highlight_fraction",
            "attention_check_rate", "assistance", "long_threshold_words", "hourly_wage_usd", "bonus_usd",
            "bonus_every_hits", "min_approval_rate", "min_approved_hits", "worker_locales", "created",
        ]


class DocumentSentenceSerializer(BuiltOnce):
    class Meta:
        model = DocumentSentence
        fields = ["index", "text", "turn", "speaker"]


class DocumentSerializer(BuiltOnce):
    """A document; to an annotator (a document of its own HIT) only its id, project and sentences."""

    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    sentences = DocumentSentenceSerializer(many=True, read_only=True)
    SHOWN_TO_ANNOTATORS = ("id", "project", "sentences")

    class Meta:
        model = Document
        fields = [
            "id", "project", "uid", "doc_id", "source", "domain", "input_type", "length", "redact_type",
            "word_count", "text", "reference", "sentences",
        ]

    def to_representation(self, document):
        data = super().to_representation(document)
        if document.project_id in self.context.get("managed_project_ids", ()):
            return data
        return {name: data[name] for name in self.SHOWN_TO_ANNOTATORS}


class SummarySentenceSerializer(BuiltOnce):
    class Meta:
        model = SummarySentence
        fields = ["index", "text"]


class SummarySerializer(BuiltOnce):
    document_uid = serializers.CharField(source="document.uid", read_only=True)
    sentences = SummarySentenceSerializer(many=True, read_only=True)

    class Meta:
        model = Summary
        fields = ["id", "document", "document_uid", "model", "text", "sentences"]


class KeyFactSerializer(BuiltOnce):
    class Meta:
        model = KeyFact
        fields = ["id", "document", "index", "text", "origin", "status"]


class ProjectScopedViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Lists what annotation.permissions lets the caller see; `?project=slug` narrows it."""

    project_path = "project"

    def get_serializer_context(self):
        managed = set(managed_projects(self.request.user).values_list("pk", flat=True))
        return {**super().get_serializer_context(), "managed_project_ids": managed}

    def narrowed(self, queryset: QuerySet) -> QuerySet:
        if slug := self.request.query_params.get("project"):
            queryset = queryset.filter(**{f"{self.project_path}__slug": slug})
        return queryset


class ProjectViewSet(ProjectScopedViewSet):
    serializer_class = ProjectSerializer
    lookup_field = "slug"

    def get_queryset(self):
        return projects_visible_to(self.request.user).order_by("slug")


class DocumentViewSet(ProjectScopedViewSet):
    serializer_class = DocumentSerializer

    def get_queryset(self):
        documents = documents_visible_to(self.request).select_related("project").prefetch_related("sentences")
        return self.narrowed(documents).order_by("pk")


class SummaryViewSet(ProjectScopedViewSet):
    serializer_class = SummarySerializer
    project_path = "document__project"

    def get_queryset(self):
        queryset = summaries_visible_to(self.request.user).select_related("document").prefetch_related("sentences")
        return self.narrowed(queryset).order_by("pk")


class KeyFactViewSet(ProjectScopedViewSet):
    serializer_class = KeyFactSerializer
    project_path = "document__project"

    def get_queryset(self):
        return self.narrowed(keyfacts_visible_to(self.request.user)).order_by("pk")
