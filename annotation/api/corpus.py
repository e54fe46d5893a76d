"""REST API (read side of the corpus). Access goes through annotation.permissions, as for the pages."""

from django.db.models import QuerySet
from rest_framework import mixins, serializers, viewsets

from ..models import Document, DocumentSentence, KeyFact, Project, Summary, SummarySentence
from ..permissions import projects_visible_to


class ProjectSerializer(serializers.ModelSerializer):
    class Meta:
        model = Project
        fields = [
            "id", "slug", "name", "description", "annotators_per_unit", "highlight_fraction",
            "attention_check_rate", "assistance", "long_threshold_words", "hourly_wage_usd", "bonus_usd",
            "bonus_every_hits", "min_approval_rate", "min_approved_hits", "worker_locales", "created",
        ]


class DocumentSentenceSerializer(serializers.ModelSerializer):
    class Meta:
        model = DocumentSentence
        fields = ["index", "text", "turn", "speaker"]


class DocumentSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    sentences = DocumentSentenceSerializer(many=True, read_only=True)

    class Meta:
        model = Document
        fields = [
            "id", "project", "uid", "doc_id", "source", "domain", "input_type", "length", "redact_type",
            "word_count", "text", "reference", "sentences",
        ]


class SummarySentenceSerializer(serializers.ModelSerializer):
    class Meta:
        model = SummarySentence
        fields = ["index", "text"]


class SummarySerializer(serializers.ModelSerializer):
    document_uid = serializers.CharField(source="document.uid", read_only=True)
    sentences = SummarySentenceSerializer(many=True, read_only=True)

    class Meta:
        model = Summary
        fields = ["id", "document", "document_uid", "model", "text", "sentences"]


class KeyFactSerializer(serializers.ModelSerializer):
    class Meta:
        model = KeyFact
        fields = ["id", "document", "index", "text", "origin", "status"]


class ProjectScopedViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Lists only what belongs to the projects the caller is a member of; `?project=slug` narrows it."""

    project_path = "project"

    def visible(self, queryset: QuerySet) -> QuerySet:
        projects = projects_visible_to(self.request.user)
        queryset = queryset.filter(**{f"{self.project_path}__in": projects})
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
        return self.visible(Document.objects.select_related("project").prefetch_related("sentences")).order_by("pk")


class SummaryViewSet(ProjectScopedViewSet):
    serializer_class = SummarySerializer
    project_path = "document__project"

    def get_queryset(self):
        queryset = Summary.objects.select_related("document").prefetch_related("sentences")
        return self.visible(queryset).order_by("pk")


class KeyFactViewSet(ProjectScopedViewSet):
    serializer_class = KeyFactSerializer
    project_path = "document__project"

    def get_queryset(self):
        return self.visible(KeyFact.objects.all()).order_by("pk")
