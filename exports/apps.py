from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"
    verbose_name = "Analytics and exports"

    def ready(self):
        from . import tasks  # noqa: F401 (registers the app's job kinds)
