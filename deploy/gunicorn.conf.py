"""gunicorn settings for finegrain's web process (Docker, systemd and the native smoke test use this file).

    gunicorn --config deploy/gunicorn.conf.py config.wsgi:application

Environment: GUNICORN_BIND (default 127.0.0.1:8000; only nginx may reach it, because the login rate limit trusts
the X-Real-IP header nginx sets), GUNICORN_WORKERS (default 2 x cores + 1, at most 8), GUNICORN_THREADS (1),
GUNICORN_TIMEOUT (60 s), GUNICORN_MAX_REQUESTS (0: workers are not recycled), LOG_FORMAT (plain or json, as for
Django).
"""

import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000").split(",")
workers = int(os.environ.get("GUNICORN_WORKERS", min(2 * multiprocessing.cpu_count() + 1, 8)))
threads = int(os.environ.get("GUNICORN_THREADS", 1))
# Pages answer in milliseconds; long work runs in Celery. The longest request is an import upload (up to
# FINEGRAIN_MAX_UPLOAD_BYTES, 1 GiB by default), which nginx buffers completely before it reaches gunicorn.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", 60))
graceful_timeout = 30
keepalive = 5
# No worker recycling by default: under the load benchmark a worker's memory stays flat (benchmarks/RESULTS.md,
# "Worker recycling"), while recycling every worker after about the same number of requests left the server
# answering nothing for 7-11 s, all of them booting at once. An operator who wants it sets GUNICORN_MAX_REQUESTS;
# the jitter is then half of it, so that the restarts spread out. (No preload_app: HUP must load new code.)
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", 0))
max_requests_jitter = max_requests // 2
# The heartbeat file on tmpfs: a container's overlay filesystem can stall it and get healthy workers killed.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
# Nothing here uses gunicornc, and its default socket in $HOME would collide between two instances on one host.
control_socket_disable = True
# nginx talks to gunicorn over loopback or the compose network; Django itself reads X-Forwarded-Proto
# (SECURE_PROXY_SSL_HEADER), so gunicorn only needs to trust it for its own wsgi.url_scheme.
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")

accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()
capture_output = True

if os.environ.get("LOG_FORMAT") == "json":
    # One JSON object a line for gunicorn's own records too; the access line is the `message` field.
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "json": {
                "()": "pythonjsonlogger.json.JsonFormatter",
                "fmt": "%(asctime)s %(levelname)s %(name)s %(process)d %(message)s",
                "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
            }
        },
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stdout"},
        },
        "loggers": {
            "gunicorn.error": {"handlers": ["console"], "level": loglevel.upper(), "propagate": False},
            "gunicorn.access": {"handlers": ["console"], "level": "INFO", "propagate": False},
        },
    }
