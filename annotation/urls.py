from django.urls import path, register_converter

from .views import (
    costs,
    crowd,
    crowd_manager,
    hits,
    jobs,
    people,
    progress,
    project_settings,
    projects,
    quality,
    review,
    work,
)


class TaskConverter:
    regex = "fv|kv|ka"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return str(value)


register_converter(TaskConverter, "task")

# The annotator's pages, under work/. config/urls.py lists them first: a request tries the patterns in order, and
# an answer saved (most of all requests) would otherwise try every manager's pattern before reaching its own.
work_urlpatterns = [
    # `crowd_aware` lets a worker with a signed session token (MTurk, Prolific, private
    # link) use the same HIT views; without a token they behave exactly as before (log-in and CSRF cookie).
    path("hits/<uuid:assignment_id>/answers/<int:position>/", crowd.crowd_aware(hits.hit_answer, kind="answer"),
         name="hit_answer"),
    path("hits/<uuid:assignment_id>/", crowd.crowd_aware(hits.hit_page), name="hit_page"),
    path("hits/<uuid:assignment_id>/flags/<int:position>/", crowd.crowd_aware(hits.hit_flag, kind="answer"),
         name="hit_flag"),
    path("hits/<uuid:assignment_id>/submit/", crowd.crowd_aware(hits.hit_submit, kind="submit"), name="hit_submit"),
    path("hits/<uuid:assignment_id>/return/", crowd.crowd_aware(hits.hit_return, kind="return"), name="hit_return"),
    path("", work.work_home, name="work_home"),
    path("instructions/", work.instructions, name="work_instructions"),
    path("<slug:slug>/<task:task>/next/", work.start_next, name="work_next"),
    path("<slug:slug>/screening/", quality.screening, name="work_screening"),
]

urlpatterns = [
    path("", projects.home, name="home"),
    path("projects/", projects.project_list, name="project_list"),
    path("projects/new/", projects.project_create, name="project_create"),
    path("projects/<slug:slug>/", projects.project_detail, name="project_detail"),
    path("projects/<slug:slug>/import/", projects.import_upload, name="import_upload"),
    path("projects/<slug:slug>/settings/", project_settings.project_settings, name="project_settings"),
    path("projects/<slug:slug>/review/", review.review, name="review"),
    path("projects/<slug:slug>/review/units/<uuid:unit_id>/", review.review_unit, name="review_unit"),
    path("projects/<slug:slug>/hits/<uuid:hit_id>/send-back/", review.hit_send_back, name="hit_send_back"),
    path("projects/<slug:slug>/people/", people.people_page, name="people"),
    path("projects/<slug:slug>/people/change/", people.people_change, name="people_change"),
    path("invitation/<str:token>/", people.invitation_page, name="invitation"),
    path("projects/<slug:slug>/documents/<int:pk>/", projects.document_detail, name="document_detail"),
    # Long work of every kind: the job's page, and the fragment its pages poll.
    path("projects/<slug:slug>/jobs/<int:pk>/", jobs.job_status, name="job_status"),
    path("projects/<slug:slug>/numbers/<slug:kind>/", jobs.numbers_status, name="numbers_status"),
    path("projects/<slug:slug>/numbers/<slug:kind>/update/", jobs.numbers_update, name="numbers_update"),
    # The manager's view of the annotation work.
    path("projects/<slug:slug>/progress/", progress.progress, name="progress"),
    path("projects/<slug:slug>/hits/", progress.hit_list, name="hit_list"),
    path("projects/<slug:slug>/hits/build/", progress.hits_build, name="hits_build"),
    path("projects/<slug:slug>/hits/ablation/", progress.hits_ablation, name="hits_ablation"),
    path("projects/<slug:slug>/hits/<uuid:hit_id>/", progress.hit_detail, name="hit_detail"),
    path("projects/<slug:slug>/hits/<uuid:hit_id>/assistance/", progress.hit_assistance, name="hit_assistance"),
    path("projects/<slug:slug>/annotators/", progress.annotator_list, name="annotator_list"),
    path("projects/<slug:slug>/costs/", costs.cost_page, name="costs"),
    # Quality control (managers), and the annotators' screening test.
    path("projects/<slug:slug>/quality/", quality.quality_dashboard, name="quality_dashboard"),
    path("projects/<slug:slug>/quality/annotators/<uuid:annotator_id>/", quality.annotator_quality,
         name="annotator_quality"),
    path("projects/<slug:slug>/quality/annotators/<uuid:annotator_id>/status/", quality.annotator_status_view,
         name="annotator_status"),
    path("projects/<slug:slug>/quality/grades/<uuid:assignment_id>/override/", quality.grade_override_view,
         name="grade_override"),
    # Crowd providers: the workers' ways in, and the manager's pages (annotation/views/crowd*.py).
    path("crowd/mturk/<uuid:batch_id>/", crowd.mturk_entry, name="crowd_mturk_entry"),
    path("crowd/prolific/<uuid:batch_id>/", crowd.prolific_entry, name="crowd_prolific_entry"),
    path("crowd/link/next/", crowd.link_next, name="crowd_link_next"),
    path("crowd/link/<str:token>/", crowd.link_entry, name="crowd_link"),
    path("crowd/done/<uuid:assignment_id>/", crowd.done, name="crowd_done"),
    path("projects/<slug:slug>/crowd/", crowd_manager.manage, name="crowd_manage"),
    path("projects/<slug:slug>/crowd/publish/", crowd_manager.publish, name="crowd_publish"),
    path("projects/<slug:slug>/crowd/workers/<uuid:annotator_id>/", crowd_manager.worker, name="crowd_worker"),
    path("projects/<slug:slug>/crowd/workers/<uuid:annotator_id>/decide/", crowd_manager.decide,
         name="crowd_decide"),
    path("projects/<slug:slug>/crowd/links/", crowd_manager.link_new, name="crowd_link_new"),
    path("projects/<slug:slug>/crowd/links/<uuid:link_id>/revoke/", crowd_manager.link_revoke_view,
         name="crowd_link_revoke"),
]
