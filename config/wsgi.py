import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Celery binds its tasks on their first use, about 0.02 s: done as the web process starts, the first job a process
# queues after a start or a recycling does not wait for it.
from config import celery_app  # noqa: E402

celery_app.finalize(auto=True)
