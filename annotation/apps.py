from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self):
        from . import tasks  # noqa: F401 (registers the app's job kinds)
        from .crowd import tasks as crowd_tasks  # noqa: F401 (registers crowd publishing's job kind)
        from .crowd import topups  # noqa: F401 (releases the top-up job's HITs to the crowd)
