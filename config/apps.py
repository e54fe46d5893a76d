"""The project package as an app, for what must happen once Django has started and never when settings are imported."""

from pathlib import Path

from django.apps import AppConfig
from django.conf import settings
from django.contrib.admin.apps import AdminConfig


class FinegrainConfig(AppConfig):
    name = "config"
    verbose_name = "finegrain"

    def ready(self) -> None:
        # The SQLite database's folder, the embedded broker's and the laptop's STATIC_ROOT (config/settings.py).
        for folder in settings.FINEGRAIN_STARTUP_FOLDERS:
            Path(folder).mkdir(parents=True, exist_ok=True)


class OperatorAdminConfig(AdminConfig):
    """django.contrib.admin with the site that only superusers may open (config/admin.py)."""

    default_site = "config.admin.OperatorAdminSite"
