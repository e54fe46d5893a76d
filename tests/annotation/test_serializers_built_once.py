"""Serializers that build their fields once per class (annotation.serializers.BuiltOnce) give every instance the
fields DRF would have built for it, and never share one bound field between two instances."""

import pytest
from django.urls import get_resolver
from rest_framework import serializers

from annotation.serializers import BuiltOnce


def all_subclasses(cls):
    for subclass in cls.__subclasses__():
        yield subclass
        yield from all_subclasses(subclass)


def project_model_serializers():
    get_resolver().url_patterns  # noqa: B018 (loads every view module, and with them every serializer)
    return sorted({cls for cls in all_subclasses(serializers.ModelSerializer)
                   if cls.__module__.split(".")[0] in ("annotation", "corpus", "assist", "exports")
                   and hasattr(cls, "Meta")},
                  key=lambda cls: cls.__qualname__)


def test_every_model_serializer_of_the_project_builds_its_fields_once():
    found = project_model_serializers()
    assert len(found) >= 10
    assert [cls.__qualname__ for cls in found if not issubclass(cls, BuiltOnce)] == []


@pytest.mark.parametrize("serializer_class", project_model_serializers(), ids=lambda cls: cls.__qualname__)
def test_an_instance_gets_the_fields_drf_builds_and_its_own_copies(serializer_class):
    first, second = serializer_class(), serializer_class()
    drf_built = serializers.ModelSerializer.get_fields(serializer_class())
    assert repr(first.fields) == repr(second.fields)
    assert list(first.fields) == list(drf_built)
    assert [repr(field) for field in first.fields.values()] == [repr(field) for field in drf_built.values()]
    for name, field in first.fields.items():
        assert field is not second.fields[name] and field.parent is first and second.fields[name].parent is second
