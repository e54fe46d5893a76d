"""REST API for quality control: graded submissions and a manager's override (managers only, via
annotation.permissions). A grade is addressed by its assignment's id."""

from django.urls.converters import UUIDConverter
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from ..models import Grade
from ..permissions import get_managed_grade, grades_visible_to
from ..serializers import BuiltOnce
from ..services.grades import OverrideRefused, grade_override


class GradeSerializer(BuiltOnce):
    assignment = serializers.UUIDField(source="assignment.public_id", read_only=True)
    project = serializers.CharField(source="assignment.hit.project.slug", read_only=True)
    annotator = serializers.CharField(source="assignment.annotator.pseudonym", read_only=True)
    counts = serializers.BooleanField(read_only=True)
    overridden_by = serializers.CharField(source="overridden_by.get_username", read_only=True, default=None)

    class Meta:
        model = Grade
        fields = ["assignment", "project", "annotator", "passed", "checks_total", "checks_failed", "reason",
                  "graded_at", "override_passed", "override_reason", "overridden_by", "overridden_at", "counts"]


class OverrideSerializer(serializers.Serializer):
    passed = serializers.BooleanField()
    reason = serializers.CharField(max_length=2000, allow_blank=False, trim_whitespace=True)


class GradeViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Grades of the projects you manage. Filters: `?project=slug&passed=true|false`."""

    serializer_class = GradeSerializer
    lookup_field = "assignment__public_id"
    lookup_url_kwarg = "assignment"
    # An assignment's UUID: anything else is no such address (404), never a lookup that raises on it.
    lookup_value_regex = UUIDConverter.regex

    def get_queryset(self):
        queryset = grades_visible_to(self.request.user).select_related(
            "assignment__hit__project", "assignment__annotator", "overridden_by")
        if slug := self.request.query_params.get("project"):
            queryset = queryset.filter(assignment__hit__project__slug=slug)
        passed = self.request.query_params.get("passed")
        if passed in ("true", "false"):
            queryset = queryset.filter(passed=passed == "true")
        return queryset.order_by("-graded_at", "pk")

    @extend_schema(request=OverrideSerializer, responses={200: GradeSerializer})
    @action(detail=True, methods=["post"])
    def override(self, request, assignment=None):
        """Overturn or confirm the automatic grade, with a reason; approve/reject decisions follow."""
        grade = get_managed_grade(request.user, assignment)
        data = OverrideSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            grade = grade_override(grade=grade, user=request.user, **data.validated_data)
        except OverrideRefused as refusal:
            return Response({"detail": str(refusal)}, status=refusal.status_code)
        return Response(GradeSerializer(grade).data)
