"""finegrain settings.

Everything comes from the environment. With nothing set, the platform runs on one laptop: SQLite, an embedded
Celery broker in a folder (`manage.py run_demo` starts a worker for it), the bundled embedding model, the offline
pre-labeler. Production sets DATABASE_URL, CELERY_BROKER_URL,
SECRET_KEY, ALLOWED_HOSTS and FINEGRAIN_HTTPS (deploy/env.example lists every variable).
"""

from decimal import Decimal
from pathlib import Path

import dj_database_url
from django.urls import reverse

from assist.config import DEFAULTS as assist_defaults
from assist.config import offline_threshold_for

from .env import env, envbool, envdecimal, envfloat, envint, envlist

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env("FINEGRAIN_DATA_DIR", str(BASE_DIR / "var")))
# Folders the laptop defaults write to, made when Django starts (config/apps.py), never when this module is imported:
# importing settings must not touch the disk (a check, a test, a tool that only reads them).
FINEGRAIN_STARTUP_FOLDERS: list[Path] = []

DEBUG = envbool("DEBUG", False)
# The fallback key only ever protects a laptop demo; `check --deploy` flags it, production sets SECRET_KEY.
SECRET_KEY = env("SECRET_KEY") or "django-insecure-finegrain-local-only-do-not-deploy"
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])
SITE_URL = env("SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "config.apps.FinegrainConfig",
    # django.contrib.admin, open to superusers only (config/admin.py).
    "config.apps.OperatorAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "csp",
    "corpus",
    "annotation",
    "assist",
    "exports",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before anything reads the session or a parameter: text the database cannot store is a 400 (NUL in `?q=%00`).
    "config.request_guard.RefuseUnstorableText",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "corpus.first_login.RequirePasswordChange",
    # One caller per request: a log-in or a crowd worker's session, never both, and the latter only on its own routes.
    "annotation.crowd.tokens.OneCallerPerRequest",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
# The pages of corpus objects are annotation's: corpus, the ground floor, names no URL of the floors above it.
ABSOLUTE_URL_OVERRIDES = {
    "corpus.project": lambda project: reverse("project_detail", args=[project.slug]),
    "corpus.document": lambda document: reverse("document_detail", args=[document.project.slug, document.pk]),
}
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotation.crowd.context.crowd_session",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{DATA_DIR / 'finegrain.sqlite3'}",
        conn_max_age=envint("DB_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default serves a web server's workers and in-process tasks from one file (benchmarks/hit_load.py
    # --db sqlite, RESULTS.md). WAL: pages read while an answer is being committed, and a commit appends to the log
    # instead of rewriting the file; synchronous=NORMAL is WAL's intended pairing (no fsync per commit; a killed
    # process loses nothing, a power cut at most the last commits, never the file). IMMEDIATE: a write transaction
    # takes the write lock when it begins, so concurrent writers queue (for up to `timeout` seconds, the busy
    # timeout) instead of one failing with "database is locked" when it first writes. Connections are kept
    # (DB_CONN_MAX_AGE) as on PostgreSQL: opening one runs the PRAGMAs and registers Django's SQL functions again, a
    # twentieth of a saved answer's CPU; between requests a kept connection holds no transaction, so no lock either.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": envint("SQLITE_BUSY_TIMEOUT", 20),
    }
    if DATABASES["default"]["NAME"] not in ("", ":memory:"):
        # SQLite creates the database file, not its folder.
        FINEGRAIN_STARTUP_FOLDERS.append(Path(DATABASES["default"]["NAME"]).parent)
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend with a health check that needs no query while the server is silent (config/postgresql).
    DATABASES["default"]["ENGINE"] = "config.postgresql"
    # An unreachable server fails a request (and /health/) within seconds instead of holding a gunicorn worker.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", envint("DB_CONNECT_TIMEOUT", 5))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHE_URL = env("CACHE_URL", env("CELERY_BROKER_URL") if env("CELERY_BROKER_URL").startswith("redis") else "")
if CACHE_URL:
    # Django's Redis backend, with a Redis client kept per connection pool (config/cache.py).
    CACHES = {"default": {"BACKEND": "config.cache.RedisCache", "LOCATION": CACHE_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# The HIT page's source text, rendered once per document and process: its key holds the text's hash, so a stored
# copy is never stale, and each worker keeps its own rather than fetching ~100 KB from Redis for every page.
CACHES["hit_source"] = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "hit_source",
                        "OPTIONS": {"MAX_ENTRIES": envint("FINEGRAIN_SOURCE_CACHE_ENTRIES", 200)}}
# Every annotator request reads the session: from Redis when there is one (written through to the database, so a
# Redis restart logs nobody out), from the database otherwise (Django's, its read built once: config/sessions.py).
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db" if CACHE_URL else "config.sessions"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# ModelBackend with the read of every request's user compiled once (config/login.py); ModelBackend itself after it
# for the sessions made before.
AUTHENTICATION_BACKENDS = ["config.login.AccountBackend", "django.contrib.auth.backends.ModelBackend"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env("STATIC_ROOT", str(DATA_DIR / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_ROOT = Path(env("MEDIA_ROOT", str(DATA_DIR / "media")))
FILE_UPLOAD_HANDLERS = ["config.upload_handlers.MemoryUpload", "config.upload_handlers.DiskUpload"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if envbool("FINEGRAIN_MANIFEST_STATIC", not DEBUG and bool(env("STATIC_ROOT")))
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
# Serve files straight from static/ when collectstatic has not run (the laptop demo).
WHITENOISE_USE_FINDERS = True

# --- Security. FINEGRAIN_HTTPS=true behind TLS turns on everything `check --deploy` asks for.
HTTPS = envbool("FINEGRAIN_HTTPS", False)
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31536000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if envbool("FINEGRAIN_BEHIND_PROXY", HTTPS) else None
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# Load balancers and container health checks call /health/ over plain HTTP from inside the network.
SECURE_REDIRECT_EXEMPT = [r"^health/$"]
# Joining the browsers' HSTS preload list binds every subdomain for months and is the domain owner's decision:
# SECURE_HSTS_PRELOAD=true opts in; until then `check --deploy` is told that leaving it off is deliberate (W021).
SILENCED_SYSTEM_CHECKS = ["security.W021"] if HTTPS and not SECURE_HSTS_PRELOAD else []

# Failed log-ins allowed per client address and per username before the login pages answer 429 (config/login.py).
# django-ratelimit keeps the counts in the default cache: local memory on a laptop, Redis when CACHE_URL is set.
FINEGRAIN_LOGIN_FAILURES_PER_IP = env("FINEGRAIN_LOGIN_FAILURES_PER_IP", "30/15m")
FINEGRAIN_LOGIN_FAILURES_PER_USERNAME = env("FINEGRAIN_LOGIN_FAILURES_PER_USERNAME", "10/15m")
RATELIMIT_IP_META_KEY = "config.login.client_ip"

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
        "base-uri": ["'none'"],
        "object-src": ["'none'"],
    }
}

# --- REST API
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        # REST framework's, with the token's read built once per process (config/login.py).
        "config.login.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's own JSON parser with a nesting limit and the storable-text rule (config/request_guard.py).
    "DEFAULT_PARSER_CLASSES": [
        "config.request_guard.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "finegrain API",
    "DESCRIPTION": "Projects, documents, summaries, key-facts and annotation work of the UniSumEval protocol.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema maps every endpoint and field, the whole attack surface: signed-in users only (anonymous API
    # clients get the API's usual 403). /api/docs/ asks for a log-in too (config/urls.py).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI from the installed sidecar package: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "AssignmentStatusEnum": "annotation.models.Assignment.Status",
        "KeyFactStatusEnum": "corpus.models.KeyFact.Status",
    },
}

# --- Celery. Long work never runs inside a request: it is a Job row plus a task a worker process runs.
# No CELERY_BROKER_URL: an embedded broker that needs no server, kombu's filesystem transport in DATA_DIR/broker
# (messages are files; `make demo` starts one worker beside the web server). Production sets a Redis URL.
FINEGRAIN_EMBEDDED_BROKER = not env("CELERY_BROKER_URL")
CELERY_BROKER_URL = env("CELERY_BROKER_URL") or "filesystem://localhost/"
BROKER_DIR = Path(env("FINEGRAIN_BROKER_DIR", str(DATA_DIR / "broker")))
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
# A killed worker must not lose a task: acknowledge after the body ran, and take one task at a time.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {"assist.tasks.*": {"queue": "assist"}, "annotation.crowd.*": {"queue": "crowd"}}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis hands an unacknowledged task to another worker after this many seconds, even while the first one still runs
# it (acks_late). It must exceed the longest task, countdowns included (crowd retries wait up to 600 s): at worst an
# LLM call takes ~19 min (4 attempts x FINEGRAIN_LLM_TIMEOUT + 3 Retry-After waits of up to 300 s), and one assist
# document makes 3 rounds of pre-label calls, 1 generation call and 1 call per voter: over 2 hours with 3 voters.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": envint("CELERY_VISIBILITY_TIMEOUT", 6 * 3600)}
if FINEGRAIN_EMBEDDED_BROKER:
    # One folder for the web process and the worker alike (a message is written and read in the same place); the
    # worker lists the folder every 0.05 s (an idle run_demo worker then used 0.5% of a core, 0.15 CPU s in 30 s), so
    # a job starts within a twentieth of a second of its request.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "messages"), "data_folder_out": str(BROKER_DIR / "messages"),
        "control_folder": str(BROKER_DIR / "control"), "polling_interval": 0.05,
    }
    FINEGRAIN_STARTUP_FOLDERS += [BROKER_DIR / "messages", BROKER_DIR / "control"]
# `celery -A config beat` runs these; expired HIT reservations also return to the pool lazily.
CELERY_BEAT_SCHEDULE = {
    "release-expired-reservations": {"task": "annotation.tasks.release_expired", "schedule": 60.0},
    "crowd-drain-outbox": {"task": "annotation.crowd.drain_outbox", "schedule": 300.0},
    "crowd-drain-publishing": {"task": "annotation.crowd.drain_publishing", "schedule": 300.0},
}

# --- The protocol and its limits
FINEGRAIN_MAX_TEXT_CHARS = envint("FINEGRAIN_MAX_TEXT_CHARS", 200_000)
# Largest import file. The upload goes to a temporary file on disk (not memory) and the import reads it a piece at a
# time, so the limit is disk space and patience: 1 GiB takes a file of 10x UniSumEval's size (363 MB). nginx's
# client_max_body_size (deploy/nginx) must be a little above it.
FINEGRAIN_MAX_UPLOAD_BYTES = envint("FINEGRAIN_MAX_UPLOAD_BYTES", 1024 * 1024 * 1024)
# Processes that split an import's texts into sentences (the splitter is pure Python: one core splits ~140,000
# words a second); 1 splits in the importing process. 0: each process of the Celery worker's pool is owed an equal
# share of the cores, and an import takes its own share and those of its idle siblings, never a busy one's
# (corpus.importing.split_processes).
FINEGRAIN_SEGMENT_PROCESSES = envint("FINEGRAIN_SEGMENT_PROCESSES", 0)

# --- AI assistance (assist/). The defaults are written once, in assist.config (its modules also run without Django,
# reading the environment themselves); under Django they read these settings only.
FINEGRAIN_EMBEDDING_MODEL = env("FINEGRAIN_EMBEDDING_MODEL", assist_defaults.embedding_model)
# Other local sentence-transformers model directories a manager may choose for a project's evaluators (SBERTScore,
# FactSim): the operator lists them, since a page must never name a path on the server.
FINEGRAIN_EVALUATOR_MODELS = envlist("FINEGRAIN_EVALUATOR_MODELS", [])
FINEGRAIN_LLM_BACKEND = env("FINEGRAIN_LLM_BACKEND", assist_defaults.llm_backend)
FINEGRAIN_OPENAI_BASE_URL = env("FINEGRAIN_OPENAI_BASE_URL", assist_defaults.openai_base_url)
FINEGRAIN_OPENAI_API_KEY = env("FINEGRAIN_OPENAI_API_KEY", assist_defaults.openai_api_key)
FINEGRAIN_OPENAI_MODEL = env("FINEGRAIN_OPENAI_MODEL", assist_defaults.openai_model)
FINEGRAIN_BEDROCK_MODEL_ID = env("FINEGRAIN_BEDROCK_MODEL_ID", assist_defaults.bedrock_model_id)
FINEGRAIN_BEDROCK_REGION = env("FINEGRAIN_BEDROCK_REGION", assist_defaults.bedrock_region)
FINEGRAIN_LLM_TIMEOUT = envfloat("FINEGRAIN_LLM_TIMEOUT", assist_defaults.llm_timeout)
FINEGRAIN_LLM_MAX_RETRIES = envint("FINEGRAIN_LLM_MAX_RETRIES", assist_defaults.llm_max_retries)
FINEGRAIN_LLM_CONCURRENCY = envint("FINEGRAIN_LLM_CONCURRENCY", assist_defaults.llm_concurrency)
FINEGRAIN_LLM_REQUESTS_PER_MINUTE = envint("FINEGRAIN_LLM_REQUESTS_PER_MINUTE", assist_defaults.llm_requests_per_minute)
FINEGRAIN_LLM_VOTER_BACKENDS = envlist("FINEGRAIN_LLM_VOTER_BACKENDS", list(assist_defaults.llm_voter_backends))
FINEGRAIN_OFFLINE_VERIFIER = envbool("FINEGRAIN_OFFLINE_VERIFIER", assist_defaults.offline_verifier)
# Unset: the threshold that goes with the verifier setting (assist.config.offline_threshold_for).
FINEGRAIN_OFFLINE_THRESHOLD = envfloat("FINEGRAIN_OFFLINE_THRESHOLD",
                                       offline_threshold_for(FINEGRAIN_OFFLINE_VERIFIER))

# Benchmark exports (exports/storage.py): when a bucket is set, every finished export is also uploaded there.
FINEGRAIN_EXPORT_S3_BUCKET = env("FINEGRAIN_EXPORT_S3_BUCKET")
FINEGRAIN_EXPORT_S3_PREFIX = env("FINEGRAIN_EXPORT_S3_PREFIX", "finegrain-exports")
FINEGRAIN_EXPORT_S3_REGION = env("FINEGRAIN_EXPORT_S3_REGION")
FINEGRAIN_EXPORT_S3_ENDPOINT_URL = env("FINEGRAIN_EXPORT_S3_ENDPOINT_URL")

# LOG_FORMAT=json: one JSON object a line (python-json-logger) for a log collector; `plain` reads better on a laptop.
LOG_FORMAT = env("LOG_FORMAT", "plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ValueError(f"LOG_FORMAT must be plain or json, got {LOG_FORMAT!r}")
LOG_FORMATTERS = {
    "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    "json": {
        "()": "pythonjsonlogger.json.JsonFormatter",
        "fmt": "%(asctime)s %(levelname)s %(name)s %(process)d %(message)s",
        "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
    },
}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Only the formatter in use is built, so the laptop needs no JSON package.
    "formatters": {LOG_FORMAT: LOG_FORMATTERS[LOG_FORMAT]},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
# Celery workers replace the root logger's handlers with their own plain format unless told not to.
CELERY_WORKER_HIJACK_ROOT_LOGGER = LOG_FORMAT != "json"

if not env("STATIC_ROOT"):
    # WhiteNoise warns about a missing STATIC_ROOT even when it serves from the finders (the laptop demo).
    FINEGRAIN_STARTUP_FOLDERS.append(STATIC_ROOT)

# --- Crowd providers (annotation/crowd/; paper 3.5). Endpoints come from here, never from a request.
FINEGRAIN_MTURK_SANDBOX = envbool("FINEGRAIN_MTURK_SANDBOX", True)
FINEGRAIN_MTURK_ENDPOINT = env("FINEGRAIN_MTURK_ENDPOINT", "https://mturk-requester.us-east-1.amazonaws.com")
FINEGRAIN_MTURK_SANDBOX_ENDPOINT = env("FINEGRAIN_MTURK_SANDBOX_ENDPOINT",
                                       "https://mturk-requester-sandbox.us-east-1.amazonaws.com")
FINEGRAIN_MTURK_RETRY_MODE = env("FINEGRAIN_MTURK_RETRY_MODE", "adaptive")
FINEGRAIN_MTURK_MAX_ATTEMPTS = envint("FINEGRAIN_MTURK_MAX_ATTEMPTS", 5)
# Where a worker's browser may send the finished assignment (turkSubmitTo); anything else is refused.
FINEGRAIN_MTURK_SUBMIT_ORIGINS = envlist("FINEGRAIN_MTURK_SUBMIT_ORIGINS",
                                         ["https://www.mturk.com", "https://workersandbox.mturk.com"])
FINEGRAIN_MTURK_FRAME_HEIGHT = envint("FINEGRAIN_MTURK_FRAME_HEIGHT", 0)
# Origins allowed to frame the MTurk HIT pages besides MTurk's two worker sites (CSP frame-ancestors). Empty in
# production; a test's loopback stand-in for MTurk's worker site is listed here, never a wildcard.
FINEGRAIN_MTURK_EXTRA_FRAME_ANCESTORS = envlist("FINEGRAIN_MTURK_EXTRA_FRAME_ANCESTORS", [])
FINEGRAIN_MTURK_AUTO_APPROVAL_HOURS = envint("FINEGRAIN_MTURK_AUTO_APPROVAL_HOURS", 72)
FINEGRAIN_HIT_LIFETIME_HOURS = envint("FINEGRAIN_HIT_LIFETIME_HOURS", 7 * 24)
# A HIT still unpublished this long after its task was queued is queued again by beat (the message was lost).
FINEGRAIN_PUBLISH_REQUEUE_SECONDS = envint("FINEGRAIN_PUBLISH_REQUEUE_SECONDS", 900)
# Expected work per unit, used for the reward (project wage x time) and the cost estimate.
FINEGRAIN_SECONDS_PER_UNIT = envint("FINEGRAIN_SECONDS_PER_UNIT", 30)
# The least a crowd HIT may pay per hour of its expected work: the US federal minimum wage. Project settings, new
# projects and every publication on a paying provider are held to it; the protocol's $10.88 is 50% above (paper G.2).
FINEGRAIN_MIN_HOURLY_WAGE_USD = envdecimal("FINEGRAIN_MIN_HOURLY_WAGE_USD", Decimal("7.25"))
if FINEGRAIN_MIN_HOURLY_WAGE_USD <= 0:
    raise ValueError(f"FINEGRAIN_MIN_HOURLY_WAGE_USD must be above 0, got {FINEGRAIN_MIN_HOURLY_WAGE_USD}")
FINEGRAIN_PROLIFIC_API_URL = env("FINEGRAIN_PROLIFIC_API_URL", "https://api.prolific.com")
FINEGRAIN_PROLIFIC_TOKEN = env("FINEGRAIN_PROLIFIC_TOKEN")
FINEGRAIN_PROLIFIC_PROJECT_ID = env("FINEGRAIN_PROLIFIC_PROJECT_ID")
# Participant groups (the blocklist) belong to a workspace, not a project (docs.prolific.com, "Create a new
# participant group within a workspace": name plus workspace_id or organisation_id).
FINEGRAIN_PROLIFIC_WORKSPACE_ID = env("FINEGRAIN_PROLIFIC_WORKSPACE_ID")
# Prolific's service fee, the same on rewards and bonuses: "~33.33% ... + VAT where applicable" (Prolific researcher
# help centre, "How to resolve an underpaying study with bonus payments"). VAT is not in the default; an account
# that pays it sets the rate with VAT included.
FINEGRAIN_PROLIFIC_FEE_RATE = env("FINEGRAIN_PROLIFIC_FEE_RATE", "0.333")
FINEGRAIN_CROWD_TIMEOUT = envfloat("FINEGRAIN_CROWD_TIMEOUT", 30.0)
FINEGRAIN_LINK_MAX_AGE_DAYS = envint("FINEGRAIN_LINK_MAX_AGE_DAYS", 30)
FINEGRAIN_LINK_RATE = env("FINEGRAIN_LINK_RATE", "30/m")
# How long a worker's signed session token is honoured (a HIT's reservation is much shorter anyway).
FINEGRAIN_CROWD_SESSION_HOURS = envint("FINEGRAIN_CROWD_SESSION_HOURS", 12)
