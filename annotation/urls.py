from django.urls import path

from .views import projects

urlpatterns = [
    path("", projects.home, name="home"),
    path("projects/", projects.project_list, name="project_list"),
    path("projects/new/", projects.project_create, name="project_create"),
    path("projects/<slug:slug>/", projects.project_detail, name="project_detail"),
    path("projects/<slug:slug>/import/", projects.import_upload, name="import_upload"),
    path("projects/<slug:slug>/documents/<int:pk>/", projects.document_detail, name="document_detail"),
]
