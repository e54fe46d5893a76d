"""Serializers shared by the annotator pages and the REST API, so both show and accept exactly the same things.

`UnitDisplaySerializer` is the only way a unit reaches an annotator: the HIT page renders its output and the API
returns it. It reads the unit's display snapshot only, and leaves out what the HIT's assistance level hides.
`AnswerSerializer` validates one unit's answers, wherever they come from (an htmx save, the plain form, the API).
"""

from rest_framework import serializers

from .models import ErrorType, Hit, Label, Task, Unit

# Nobody looks at one item for more than an hour; a longer time is a tab left open.
MAX_SECONDS_ON_ITEM = 3600.0


class UnitDisplaySerializer(serializers.ModelSerializer):
    id = serializers.UUIDField(source="public_id", read_only=True)

    class Meta:
        model = Unit
        fields = ["id", "task", "position", "text", "sentence_text", "row", "column", "highlighted",
                  "ai_category", "ai_reason", "ai_source"]

    def hides(self, unit) -> bool:
        """Whether what the HIT's assistance level leaves out is removed (always, for annotators)."""
        return True

    def to_representation(self, unit):
        data = super().to_representation(unit)
        hit = self.context.get("hit") or unit.hit
        if unit.task != Task.KEYFACT_ALIGNMENT:
            for name in ("sentence_text", "row", "column"):
                data.pop(name)
        if not self.hides(unit):
            return data
        if not hit.shows_highlights:
            data.pop("highlighted")
        if not hit.shows_ai_label:
            data.pop("ai_category")
            data.pop("ai_source")
        if not hit.shows_ai_reason:
            data.pop("ai_reason")
        return data


class AnswerSerializer(serializers.Serializer):
    """One unit's answers. Every field is optional (answers arrive one at a time); only the task's fields are allowed."""

    TASK_FIELDS = {
        Task.FACT_VERIFICATION: {"has_error", "error_types", "ai_right"},
        Task.KEYFACT_VALIDATION: {"useful"},
        Task.KEYFACT_ALIGNMENT: {"aligned"},
    }

    has_error = serializers.BooleanField(required=False)
    error_types = serializers.ListField(child=serializers.ChoiceField(choices=ErrorType.choices), required=False,
                                        max_length=len(ErrorType.values))
    ai_right = serializers.BooleanField(required=False)
    useful = serializers.BooleanField(required=False)
    aligned = serializers.BooleanField(required=False)
    seconds_on_item = serializers.FloatField(required=False, min_value=0)

    def validate(self, attrs):
        unit: Unit = self.context["unit"]
        hit: Hit = self.context["hit"]
        allowed = self.TASK_FIELDS[unit.task] | {"seconds_on_item"}
        foreign = sorted(set(attrs) - allowed)
        if foreign:
            raise serializers.ValidationError(
                f"{', '.join(foreign)} is not a question of {Task(unit.task).label.lower()}.")
        if "ai_right" in attrs and "ai_right" not in unit.question_fields(hit):
            raise serializers.ValidationError({"ai_right": "This item does not show an AI judgment to agree with."})
        if "error_types" in attrs:
            chosen = set(attrs["error_types"])
            attrs["error_types"] = [value for value in ErrorType.values if value in chosen]
        stored = self.context.get("label")
        has_error = attrs["has_error"] if "has_error" in attrs else getattr(stored, "has_error", None)
        if "has_error" in attrs and has_error is False:
            attrs["error_types"] = []  # "No error" wins over types left ticked from an earlier answer.
        elif attrs.get("error_types") and has_error is None:
            attrs["has_error"] = True  # Choosing an error type says the sentence has an error.
        elif attrs.get("error_types") and has_error is False:
            raise serializers.ValidationError(
                {"error_types": "The sentence is marked as having no error; answer yes first to choose types."})
        return attrs


class LabelSerializer(serializers.ModelSerializer):
    """A label as its owner or a manager sees it."""

    unit = serializers.UUIDField(source="unit.public_id", read_only=True)
    unit_position = serializers.IntegerField(source="unit.position", read_only=True)
    assignment = serializers.UUIDField(source="assignment.public_id", read_only=True)
    annotator = serializers.CharField(source="annotator.pseudonym", read_only=True)

    class Meta:
        model = Label
        fields = ["unit", "unit_position", "assignment", "annotator", "has_error", "error_types", "ai_right",
                  "useful", "aligned", "seconds_on_item", "created", "updated_at"]
