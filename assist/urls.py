from django.urls import path

from . import views

urlpatterns = [
    path("projects/<slug:slug>/assist/", views.assist_start_view, name="assist_start"),
    path("projects/<slug:slug>/assist/hallucinogenic/", views.hallucinogenic_run, name="assist_hallucinogenic"),
]
