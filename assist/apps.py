from django.apps import AppConfig


class AssistConfig(AppConfig):
    name = "assist"
    verbose_name = "AI assistance"

    def ready(self):
        from . import tasks  # noqa: F401 (registers the app's job kinds)
