"""Serializers shared by the annotator pages and the REST API, so both show exactly the same things.

`UnitDisplaySerializer` is the only way a unit reaches an annotator: the HIT page renders its output and the API
returns it. It reads the unit's display snapshot only, leaves out what the HIT's assistance level hides, and words the
AI's reason for annotators (annotation.wording.plain_reason: no similarity numbers).
Answers, wherever they come from (an htmx save, the plain form, the API), are checked by one service function,
annotation.services.answers.clean_answers.
"""

import copy

from rest_framework import serializers

from .models import Label, Task, Unit
from .wording import plain_reason


class BuiltOnce(serializers.ModelSerializer):
    """A ModelSerializer that builds its fields from the model once per class instead of once per instance.

    DRF's ModelSerializer reads the model's metadata and builds every field each time one is made: a saved answer's
    response took 371-456 µs that way and 245-255 µs with the fields built once. Each instance gets deep copies of
    the built fields, the way DRF already copies a serializer's declared fields, so no two instances share a bound
    field. Only for serializers whose fields depend on nothing but the class (none chosen by the request or the
    context)."""

    def get_fields(self):
        built = type(self).__dict__.get("_built_fields")
        if built is None:
            built = super().get_fields()
            type(self)._built_fields = built
        return copy.deepcopy(built)


class UnitDisplaySerializer(BuiltOnce):
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
        else:
            data["ai_reason"] = plain_reason(data["ai_reason"])
        return data


class LabelSerializer(BuiltOnce):
    """A label as its owner or a manager sees it."""

    unit = serializers.UUIDField(source="unit.public_id", read_only=True)
    unit_position = serializers.IntegerField(source="unit.position", read_only=True)
    assignment = serializers.UUIDField(source="assignment.public_id", read_only=True)
    annotator = serializers.CharField(source="annotator.pseudonym", read_only=True)

    class Meta:
        model = Label
        fields = ["unit", "unit_position", "assignment", "annotator", "has_error", "error_types", "ai_right",
                  "useful", "aligned", "seconds_on_item", "created", "updated_at"]
