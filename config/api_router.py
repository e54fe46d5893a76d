from rest_framework.routers import DefaultRouter

from annotation import api

# No format suffixes (`/api/assignments/reserve.json`): the API speaks JSON, chosen by the Accept header, and every
# address exists once, so each is covered by the same permission checks and tests.
router = DefaultRouter()
router.include_format_suffixes = False
router.register("projects", api.ProjectViewSet, basename="project")
router.register("documents", api.DocumentViewSet, basename="document")
router.register("summaries", api.SummaryViewSet, basename="summary")
router.register("keyfacts", api.KeyFactViewSet, basename="keyfact")
router.register("hits", api.HitViewSet, basename="hit")
router.register("units", api.UnitViewSet, basename="unit")
router.register("assignments", api.AssignmentViewSet, basename="assignment")
router.register("labels", api.LabelViewSet, basename="label")
router.register("grades", api.GradeViewSet, basename="grade")

urlpatterns = router.urls
