from django.apps import AppConfig


class AssistConfig(AppConfig):
    name = "assist"
    verbose_name = "AI assistance"
