"""The Celery app. Workers find every task through autodiscovery: each installed app's `tasks` module, and the crowd
capability's own (annotation/crowd/tasks.py). With no CELERY_BROKER_URL the broker is the embedded one (settings)."""

import os

from celery import Celery, signals
from kombu.transport import redis as redis_transport

from corpus import worker_pool

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("finegrain")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.autodiscover_tasks(["annotation.crowd"])

_close_redis_channel = redis_transport.Channel.close


def close_redis_channel(self) -> None:
    # kombu (5.7) reads a pending BRPOP's reply before closing a channel and lets a connection error escape. When Redis
    # goes away while a worker has a free slot (its BRPOP waiting) and the loss shows on another socket first, the task
    # channel stays open, the transport is torn down under it, and closing it again raises AttributeError ('NoneType'
    # object has no attribute 'hostname'): Celery calls that unrecoverable and the worker exits instead of
    # reconnecting. A reply on a lost connection cannot be read anyway: close the rest of the channel.
    if getattr(self, "_in_poll", None):
        try:
            self._brpop_read()
        except (redis_transport.Empty, *self.connection_errors):
            pass
    _close_redis_channel(self)


redis_transport.Channel.close = close_redis_channel


@signals.worker_init.connect
def share_the_cores(sender, **kwargs) -> None:
    # Before the pool forks: each child then knows how many siblings share the machine's cores with it, and how many
    # of them are busy, when an import splits its texts in processes of its own (corpus.importing.split_processes).
    os.environ["FINEGRAIN_WORKER_POOL"] = str(sender.concurrency)
    worker_pool.share_among_pool()


@signals.task_prerun.connect
def count_a_running_task(**kwargs) -> None:
    worker_pool.task_started()


@signals.task_postrun.connect
def count_a_task_ended(**kwargs) -> None:
    worker_pool.task_ended()
