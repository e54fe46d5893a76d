from django.urls import path

from . import views

urlpatterns = [
    path("projects/<slug:slug>/analytics/", views.analytics, name="exports_analytics"),
    path("projects/<slug:slug>/analytics/<path:table>.csv", views.table_csv, name="exports_table_csv"),
    path("projects/<slug:slug>/analytics/evaluators/", views.evaluator_upload, name="exports_evaluator_upload"),
    path("projects/<slug:slug>/analytics/evaluators/runs/", views.evaluator_run, name="exports_evaluator_run"),
    path("projects/<slug:slug>/exports/", views.export_create, name="exports_create"),
    path("projects/<slug:slug>/exports/<int:pk>/files/<str:name>", views.export_download, name="exports_download"),
]
