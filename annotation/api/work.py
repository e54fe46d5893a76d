"""REST API for the annotation work: HITs, units, assignments, labels, and the annotator's actions.

Access goes through annotation.permissions, exactly as for the pages: managers read everything of their projects;
an annotator reads their own assignments and labels and acts on them (reserve, answer, submit, return). Units reach
annotators only through UnitDisplaySerializer, the serializer the HIT page renders.
"""

import re
import uuid

from django.urls.converters import UUIDConverter
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from corpus.models import Assistance

from ..models import Assignment, ErrorType, Hit, Task, Unit
from ..permissions import (
    assignments_visible_to,
    current_annotator,
    get_own_assignment,
    get_work_project,
    hits_visible_to,
    labels_visible_to,
    managed_projects,
    readable_own_assignment,
    units_visible_to,
)
from ..selectors import count_of, hit_units, labels_in_order, unit_at
from ..serializers import BuiltOnce, LabelSerializer, UnitDisplaySerializer
from ..services.answers import ANSWER_FIELDS, InvalidAnswers, save_answers
from ..services.assignment import MissingAnswers, WorkRefused, reserve_next_hit, return_assignment, submit_assignment
from ..services.assistance import AssistanceRefused, set_hit_assistance
from ..wording import QUESTION_NAMES, describe_unit


class HitSerializer(BuiltOnce):
    """A HIT; to an annotator only what its page shows: not the summary (its own sentence list, beside the HIT's
    units, would tell the attention checks apart), nor the document's name or an ablation's setting."""

    id = serializers.UUIDField(source="public_id", read_only=True)
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    document_uid = serializers.CharField(source="document.uid", read_only=True)
    summary_model = serializers.CharField(source="summary.model", read_only=True, default=None)
    assistance = serializers.CharField(source="effective_assistance", read_only=True,
                                       help_text="The level this HIT shows: its own, or else its project's.")
    assistance_override = serializers.CharField(source="assistance", read_only=True,
                                                help_text="The HIT's own level; empty when it follows its project.")
    unit_count = serializers.IntegerField(source="units_counted", read_only=True)

    class Meta:
        model = Hit
        fields = ["id", "project", "task", "position", "document", "document_uid", "summary", "summary_model",
                  "assistance", "assistance_override", "unit_count", "created"]

    MANAGERS_ONLY = ("document_uid", "summary", "summary_model", "assistance_override")

    def to_representation(self, hit):
        data = super().to_representation(hit)
        if hit.project_id not in self.context.get("managed_project_ids", ()):
            for name in self.MANAGERS_ONLY:
                data.pop(name)
        return data


class HitAssistanceSerializer(serializers.Serializer):
    assistance = serializers.ChoiceField(choices=[("", "The project's level"), *Assistance.choices],
                                         allow_blank=True)


class UnitSerializer(UnitDisplaySerializer):
    """A unit with its HIT; a manager of the unit's project also sees what the assistance level hides."""

    hit = serializers.UUIDField(source="hit.public_id", read_only=True)

    class Meta(UnitDisplaySerializer.Meta):
        fields = ["hit", *UnitDisplaySerializer.Meta.fields]

    def hides(self, unit) -> bool:
        return unit.hit.project_id not in self.context.get("managed_project_ids", ())


class AssignmentSerializer(BuiltOnce):
    id = serializers.UUIDField(source="public_id", read_only=True)
    hit = serializers.UUIDField(source="hit.public_id", read_only=True)
    project = serializers.CharField(source="hit.project.slug", read_only=True)
    task = serializers.CharField(source="hit.task", read_only=True)
    annotator = serializers.CharField(source="annotator.pseudonym", read_only=True)

    class Meta:
        model = Assignment
        fields = ["id", "hit", "project", "task", "annotator", "status", "reserved_at", "expires_at",
                  "submitted_at"]


class AssignmentDetailSerializer(AssignmentSerializer):
    """An assignment with what its HIT shows (the display fields of the page) and its labels, by position."""

    units = serializers.SerializerMethodField()
    labels = serializers.SerializerMethodField()

    class Meta(AssignmentSerializer.Meta):
        fields = [*AssignmentSerializer.Meta.fields, "units", "labels"]

    @extend_schema_field(UnitDisplaySerializer(many=True))
    def get_units(self, assignment):
        return UnitDisplaySerializer(hit_units(assignment.hit_id), many=True, context={"hit": assignment.hit}).data

    @extend_schema_field(LabelSerializer(many=True))
    def get_labels(self, assignment):
        labels = labels_in_order(assignment.pk)
        for label in labels:
            label.assignment = assignment
        return LabelSerializer(labels, many=True).data


class ReserveSerializer(serializers.Serializer):
    project = serializers.SlugField()
    task = serializers.ChoiceField(choices=Task.choices)


class AnswerRequestSerializer(serializers.Serializer):
    """One item's answers; `unit` is its position in the HIT (0-based, as in the page) or its id."""

    # The request as the schema documents it; annotation.services.answers.clean_answers checks the answers.
    has_error = serializers.BooleanField(required=False)
    error_types = serializers.ListField(child=serializers.ChoiceField(choices=ErrorType.choices), required=False,
                                        max_length=len(ErrorType.values))
    ai_right = serializers.BooleanField(
        required=False, help_text="Whether the AI judgment shown is right: one decision with has_error (the AI is "
                                  "right exactly when both say error or both say no error), so either alone gives "
                                  "the other, and a pair that contradicts itself is refused with nothing saved.")
    useful = serializers.BooleanField(required=False)
    aligned = serializers.BooleanField(required=False)
    seconds_on_item = serializers.FloatField(required=False, min_value=0)
    unit = serializers.CharField()


class SubmitSerializer(serializers.Serializer):
    submission_key = serializers.CharField(required=False, allow_blank=True, max_length=64)


class SubmitResultSerializer(serializers.Serializer):
    assignment = AssignmentSerializer()
    already_submitted = serializers.BooleanField()
    alignment_hits_created = serializers.IntegerField()


def _problem(detail: str, code: int, **extra) -> Response:
    return Response({"detail": detail, **extra}, status=code)


class HitViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """HITs: managers see their projects' HITs, an annotator the HITs they hold or submitted. Filters:
    `?project=slug&task=fv`."""

    serializer_class = HitSerializer
    lookup_field = "public_id"
    # Ids are UUIDs, as in the pages' <uuid:...> routes: anything else is no such address (404), and never reaches a
    # lookup that would raise on it.
    lookup_value_regex = UUIDConverter.regex

    def get_serializer_context(self):
        managed = set(managed_projects(self.request.user).values_list("pk", flat=True))
        return {**super().get_serializer_context(), "managed_project_ids": managed}

    def get_queryset(self):
        queryset = hits_visible_to(self.request).select_related("project", "document", "summary")
        if slug := self.request.query_params.get("project"):
            queryset = queryset.filter(project__slug=slug)
        if task := self.request.query_params.get("task"):
            queryset = queryset.filter(task=task)
        return (queryset.annotate(units_counted=count_of(Unit.objects.all(), "hit"))
                .order_by("project_id", "task", "position", "pk"))

    @extend_schema(request=HitAssistanceSerializer, responses={200: HitSerializer})
    @action(detail=True, methods=["post"])
    def assistance(self, request, public_id=None):
        """Managers: set the HIT's assistance level ('' = the project's) while nobody has started it."""
        hit = self.get_object()
        if not managed_projects(request.user).filter(pk=hit.project_id).exists():
            return _problem("Only a manager of the project may change a HIT's assistance.", status.HTTP_403_FORBIDDEN)
        data = HitAssistanceSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            set_hit_assistance(hit=hit, level=data.validated_data["assistance"], user=request.user)
        except AssistanceRefused as refusal:
            return _problem(str(refusal), status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(self.get_queryset().get(pk=hit.pk)).data)


class UnitViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Units as annotators see them (what the HIT's assistance level hides is left out). Filter: `?hit=<id>`."""

    serializer_class = UnitSerializer
    lookup_field = "public_id"
    lookup_value_regex = UUIDConverter.regex

    def get_serializer_context(self):
        managed = set(managed_projects(self.request.user).values_list("pk", flat=True))
        return {**super().get_serializer_context(), "managed_project_ids": managed}

    def get_queryset(self):
        queryset = units_visible_to(self.request).select_related("hit__project")
        if hit := self.request.query_params.get("hit"):
            queryset = queryset.filter(hit__public_id=_uuid_or_none(hit))
        return queryset.order_by("hit_id", "position")


def _uuid_or_none(value: str):
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


class AssignmentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Assignments: an annotator's own, or (for managers) all of their projects'. Actions act on one's own only."""

    lookup_field = "public_id"
    lookup_value_regex = UUIDConverter.regex

    def get_serializer_class(self):
        return AssignmentDetailSerializer if self.action == "retrieve" else AssignmentSerializer

    def get_object(self):
        # An annotator reading its own HIT, the API's commonest read: the HIT page's compiled read. The general rule
        # below is built by the ORM on every request, which took a seventh of the API's CPU under load.
        if self.action == "retrieve":
            own = readable_own_assignment(self.request, self.kwargs[self.lookup_field])
            if own is not None:
                self.check_object_permissions(self.request, own)
                return own
        return super().get_object()

    def get_queryset(self):
        queryset = assignments_visible_to(self.request).select_related("hit__project", "annotator")
        if slug := self.request.query_params.get("project"):
            queryset = queryset.filter(hit__project__slug=slug)
        if state := self.request.query_params.get("status"):
            queryset = queryset.filter(status=state)
        return queryset.order_by("-reserved_at", "pk")

    @extend_schema(request=ReserveSerializer, responses={
        200: AssignmentDetailSerializer,
        204: OpenApiResponse(description="No HIT of this task is waiting for you.")})
    @action(detail=False, methods=["post"])
    def reserve(self, request):
        """Reserve the next HIT of a task (or get back the one you hold)."""
        data = ReserveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        project = get_work_project(request, data.validated_data["project"])
        task = data.validated_data["task"]
        try:
            assignment = reserve_next_hit(current_annotator(request), project, task, confirmed=True)
        except WorkRefused as refusal:
            return _problem(str(refusal), refusal.status_code)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(AssignmentDetailSerializer(assignment).data)

    @extend_schema(request=AnswerRequestSerializer, responses={200: LabelSerializer})
    @action(detail=True, methods=["post"])
    def answers(self, request, public_id=None):
        """Save the answers of one item; the response is the stored label and what it still misses."""
        assignment = get_own_assignment(request, public_id, with_document=False)
        data = request.data
        if not isinstance(data, dict):  # JSON null, a list, a string or a number (QueryDict is a dict)
            return _problem("The body must be a JSON object: the item's `unit` and its answers.", 400)
        unknown = sorted(set(data) - {"unit", *ANSWER_FIELDS})
        if unknown:
            return _problem(f"Unknown field(s): {', '.join(unknown)}.", 400)
        if not set(data) & set(ANSWER_FIELDS):
            return _problem(f"No answer was sent: give one of {', '.join(ANSWER_FIELDS)}.", 400)
        unit = _find_unit(assignment, str(data.get("unit", "")))
        if unit is None:
            return _problem("`unit` must be the position (0-based) or the id of an item of this HIT.", 400)
        try:
            labels = save_answers(assignment=assignment,
                                  answers={unit: {k: v for k, v in data.items() if k != "unit"}})
        except InvalidAnswers as invalid:
            return _problem(str(invalid), 400, errors=invalid.errors)
        except WorkRefused as refusal:
            return _problem(str(refusal), refusal.status_code)
        label = labels[unit.pk]
        # Already loaded: the serializer reads the annotator's pseudonym without a query of its own.
        label.assignment, label.unit, label.annotator = assignment, unit, assignment.annotator
        body = LabelSerializer(label).data
        body["missing"] = [QUESTION_NAMES[name] for name in label.missing(unit, assignment.hit)]
        return Response(body)

    @extend_schema(request=SubmitSerializer, responses={200: SubmitResultSerializer})
    @action(detail=True, methods=["post"])
    def submit(self, request, public_id=None):
        """Submit the HIT. Idempotent: a resent submit answers `already_submitted: true` and changes nothing."""
        assignment = get_own_assignment(request, public_id)
        data = SubmitSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        key = data.validated_data.get("submission_key") or request.headers.get("Idempotency-Key", "")
        try:
            result = submit_assignment(assignment=assignment, submission_key=key)
        except MissingAnswers as missing:
            return _problem(str(missing), 400, missing=[
                {"item": describe_unit(unit), "position": unit.position,
                 "questions": [QUESTION_NAMES[name] for name in fields]} for unit, fields in missing.missing])
        except WorkRefused as refusal:
            return _problem(str(refusal), refusal.status_code)
        return Response({"assignment": AssignmentSerializer(result.assignment).data,
                         "already_submitted": result.already_submitted,
                         "alignment_hits_created": result.alignment_hits_created})

    @extend_schema(request=None, responses={200: AssignmentSerializer})
    @action(detail=True, methods=["post"], url_path="return")
    def return_hit(self, request, public_id=None):
        """Give the HIT back to the pool; you will not be offered it again."""
        assignment = get_own_assignment(request, public_id)
        try:
            assignment = return_assignment(assignment=assignment)
        except WorkRefused as refusal:
            return _problem(str(refusal), refusal.status_code)
        return Response(AssignmentSerializer(assignment).data)


def _find_unit(assignment: Assignment, key: str) -> Unit | None:
    # ASCII digits only, as many as a position can have: str.isdigit() also takes "²", which int() refuses.
    if re.fullmatch(r"[0-9]{1,6}", key):
        return unit_at(assignment.hit_id, int(key))
    public_id = _uuid_or_none(key)
    return assignment.hit.units.filter(public_id=public_id).first() if public_id else None


class LabelViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Labels: an annotator's own, or (for managers) every label of their projects. `?assignment=<id>&hit=<id>`."""

    serializer_class = LabelSerializer

    def get_queryset(self):
        queryset = labels_visible_to(self.request).select_related("unit", "assignment", "annotator")
        if assignment := self.request.query_params.get("assignment"):
            queryset = queryset.filter(assignment__public_id=_uuid_or_none(assignment))
        if hit := self.request.query_params.get("hit"):
            queryset = queryset.filter(unit__hit__public_id=_uuid_or_none(hit))
        if slug := self.request.query_params.get("project"):
            queryset = queryset.filter(unit__hit__project__slug=slug)
        return queryset.order_by("assignment_id", "unit__position", "pk")

