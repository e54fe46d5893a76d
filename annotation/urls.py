from django.urls import path, register_converter

from .views import hits, progress, projects, work


class TaskConverter:
    regex = "fv|kv|ka"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return str(value)


register_converter(TaskConverter, "task")

urlpatterns = [
    path("", projects.home, name="home"),
    path("projects/", projects.project_list, name="project_list"),
    path("projects/new/", projects.project_create, name="project_create"),
    path("projects/<slug:slug>/", projects.project_detail, name="project_detail"),
    path("projects/<slug:slug>/import/", projects.import_upload, name="import_upload"),
    path("projects/<slug:slug>/documents/<int:pk>/", projects.document_detail, name="document_detail"),
    # The manager's view of the annotation work.
    path("projects/<slug:slug>/progress/", progress.progress, name="progress"),
    path("projects/<slug:slug>/hits/", progress.hit_list, name="hit_list"),
    path("projects/<slug:slug>/hits/build/", progress.hits_build, name="hits_build"),
    path("projects/<slug:slug>/hits/<uuid:hit_id>/", progress.hit_detail, name="hit_detail"),
    path("projects/<slug:slug>/annotators/", progress.annotator_list, name="annotator_list"),
    # The annotator's pages.
    path("work/", work.work_home, name="work_home"),
    path("work/instructions/", work.instructions, name="work_instructions"),
    path("work/<slug:slug>/<task:task>/next/", work.start_next, name="work_next"),
    path("work/hits/<uuid:assignment_id>/", hits.hit_page, name="hit_page"),
    path("work/hits/<uuid:assignment_id>/answers/<int:position>/", hits.hit_answer, name="hit_answer"),
    path("work/hits/<uuid:assignment_id>/submit/", hits.hit_submit, name="hit_submit"),
    path("work/hits/<uuid:assignment_id>/return/", hits.hit_return, name="hit_return"),
]
