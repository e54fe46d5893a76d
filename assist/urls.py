from django.urls import path

from . import views

urlpatterns = [
    path("projects/<slug:slug>/assist/", views.assist_start, name="assist_start"),
    path("projects/<slug:slug>/assist/hallucinogenic/", views.hallucinogenic_run, name="assist_hallucinogenic"),
    path("projects/<slug:slug>/jobs/<int:pk>/", views.job_status, name="assist_job"),
]
