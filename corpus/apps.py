from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "corpus"
    verbose_name = "Corpus"

    def ready(self):
        from . import (
            first_login,  # noqa: F401 (connects the log-in signal)
            tasks,  # noqa: F401 (registers the import's job kind)
        )
