from rest_framework.routers import DefaultRouter

from annotation import api

router = DefaultRouter()
router.register("projects", api.ProjectViewSet, basename="project")
router.register("documents", api.DocumentViewSet, basename="document")
router.register("summaries", api.SummaryViewSet, basename="summary")
router.register("keyfacts", api.KeyFactViewSet, basename="keyfact")

urlpatterns = router.urls
