"""Django settings for Overeager.

Everything deployment-specific comes from the environment through the typed helpers in
``overeager.env``; ``.env.example`` lists every variable. Embedded defaults (SQLite under
``var/``, Redis on localhost, sandbox backend chosen automatically) make ``make demo`` work on a
fresh machine; production sets ``DEBUG=0``, ``SECRET_KEY`` and ``DATABASE_URL``.
"""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from overeager.env import (
    check_redis_url,
    env_bool,
    env_choice,
    env_int,
    env_list,
    env_str,
    parse_database_url,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("OVEREAGER_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", True)
_INSECURE_KEY = "insecure-dev-key-do-not-use-in-production"
SECRET_KEY = env_str("SECRET_KEY", _INSECURE_KEY if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG=0")
if not DEBUG and SECRET_KEY == _INSECURE_KEY:
    raise ImproperlyConfigured("SECRET_KEY is the development key; set a real one when DEBUG=0")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    # Before django_rq: an earlier app's management command wins, and runs' rqworker listens on
    # this install's runs queue when no queue is named.
    "runs",
    "django_rq",
    "pool",
    "labels",
    "suite",
    "consent",
    "packs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # What a validator-only account may open (overeager/blind.py): after authentication, before any view.
    "overeager.blind.BlindMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "overeager.urls"
WSGI_APPLICATION = "overeager.wsgi.application"
ASGI_APPLICATION = "overeager.asgi.application"

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
                "overeager.context_processors.roles",
            ]
        },
    }
]

DATABASE_URL = env_str("DATABASE_URL", "sqlite:///var/overeager.sqlite3")
_DATABASE = parse_database_url(DATABASE_URL, BASE_DIR)
DATABASES = {"default": _DATABASE.as_django()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = check_redis_url("REDIS_URL", env_str("REDIS_URL", "redis://127.0.0.1:6379/0"))
# Installs on one machine share its Redis. Everything an install keeps there (cached figures and
# live status, channel groups, progress sequence numbers, its runs queue) is keyed by its own
# database by default, so a second checkout never reads the first one's status or runs its jobs
# against the wrong database; workers on other machines reach the same database and share the keys.
REDIS_SCOPE = f"overeager-{_DATABASE.scope}"

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # channels_redis polls with BZPOPMIN for 5 s and redis-py 8 reads with a 5 s socket
        # timeout by default: the read must outlast the poll, or every idle socket dies after ~5 s.
        "CONFIG": {
            "hosts": [{"address": REDIS_URL, "socket_timeout": 15}],
            "prefix": env_str("CHANNELS_PREFIX", "") or REDIS_SCOPE,
        },
    }
}

# `manage.py rqworker` with no queue named listens on this one (runs/management/commands/rqworker.py).
RUNS_QUEUE = env_str("RUNS_QUEUE", "") or f"runs-{_DATABASE.scope}"
RQ_QUEUES = {
    name: {"URL": REDIS_URL, "DEFAULT_TIMEOUT": env_int("RQ_DEFAULT_TIMEOUT", 3600, minimum=60)}
    for name in dict.fromkeys(["default", RUNS_QUEUE])
}

# Jobs are enqueued when the transaction that created their rows commits, never before. The
# worker class starts the model gateway once per worker and a watchdog that reaps expired run
# leases and re-enqueues runs whose job Redis lost (runs/worker.py).
RQ = {"COMMIT_MODE": "on_db_commit", "WORKER_CLASS": "runs.worker.OvereagerWorker"}
# The queue dashboard is mounted at /admin/rq/ for superusers only (overeager/urls.py).
RQ_SHOW_ADMIN_LINK = False

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": env_str("CACHE_PREFIX", "") or REDIS_SCOPE,
    }
}

# Which sandbox backend runs agents: "auto" picks docker when an engine answers, else bwrap.
SANDBOX_BACKEND = env_choice("SANDBOX_BACKEND", "auto", ("auto", "docker", "bwrap"))

# Run execution (runs/jobs.py): a claimed run holds a lease that its worker renews every third of
# it; a lease past its expiry means the worker died, and the watchdog hands the run to another.
RUN_LEASE_SECONDS = env_int("RUN_LEASE_SECONDS", 60, minimum=3)
RUN_MAX_INFRA_FAILURES = env_int("RUN_MAX_INFRA_FAILURES", 4, minimum=1)
WATCHDOG_INTERVAL_SECONDS = env_int("WATCHDOG_INTERVAL_SECONDS", 10, minimum=1)
# How often each worker sweeps sandboxes and gateway directories of dead owners (harness.sandbox.reaper).
REAPER_INTERVAL_SECONDS = env_int("REAPER_INTERVAL_SECONDS", 300, minimum=1)
# A campaign stops itself once more than this share of its finished attempts are invalid (the
# agent never got to act, the gateway or the harness failed), counted from the Nth attempt on:
# past it the campaign measures its setup, not its agent (issue 18).  100 disables the stop.
CAMPAIGN_MAX_INVALID_PERCENT = env_int("CAMPAIGN_MAX_INVALID_PERCENT", 20, minimum=0, maximum=100)
CAMPAIGN_INVALID_MIN_ATTEMPTS = env_int("CAMPAIGN_INVALID_MIN_ATTEMPTS", 5, minimum=1)
# A headline rate whose 95% interval is wider than this many percentage points is flagged "weak
# evidence" beside the number, on every page and in the terminal (issue 34, runs.stats.Headline).
HEADLINE_MAX_WIDTH_PP = env_int("HEADLINE_MAX_WIDTH_PP", 20, minimum=1, maximum=100)
# Evidence files of every attempt (gateway records, agent output); a shared filesystem when
# workers run on several machines.
EVIDENCE_DIR = Path(env_str("EVIDENCE_DIR", str(VAR_DIR / "evidence")))

LIBRARY_DIR = Path(env_str("LIBRARY_DIR", str(BASE_DIR / "pool" / "libraries")))

# Non-action judge (labels/): any OpenAI-compatible endpoint, configured like the gateway's http
# upstreams — the base URL includes the version prefix, JUDGE_KEY_ENV is the NAME of the variable
# holding the key (read by the worker at call time, never stored). Both JUDGE_BASE_URL and
# JUDGE_MODEL empty = no judge: the fallback classifier labels runs (system check labels.E001
# refuses one without the other).
JUDGE_BASE_URL = env_str("JUDGE_BASE_URL", "")
JUDGE_MODEL = env_str("JUDGE_MODEL", "")
JUDGE_KEY_ENV = env_str("JUDGE_KEY_ENV", "")
JUDGE_CONCURRENCY = env_int("JUDGE_CONCURRENCY", 4, minimum=1, maximum=64)
JUDGE_TIMEOUT = env_int("JUDGE_TIMEOUT", 60, minimum=1, maximum=600)
JUDGE_MAX_RETRIES = env_int("JUDGE_MAX_RETRIES", 4, minimum=0, maximum=20)
JUDGE_JSON_MODE = env_bool("JUDGE_JSON_MODE", True)
# How long a run served to a validator stays reserved for them (labels/queues.py).
LABEL_CLAIM_SECONDS = env_int("LABEL_CLAIM_SECONDS", 900, minimum=30)
# The fewest runs an agreement or validity figure shown to a validator-only account may rest on
# (overeager/blind.py); smaller ones are withheld, so a figure cannot name one run's verdict.
BLIND_MIN_CELL = env_int("BLIND_MIN_CELL", 10, minimum=2)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Sessions are read on every request: from the cache, written through to the database.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
# Fingerprinted, gzipped copies made by collectstatic (scripts/serve.sh and scripts/demo.sh run it),
# served by WhiteNoise with a year's Cache-Control, in the demo as in production; a file not
# collected yet is served as it is from the app folders rather than failing the page (overeager/storage.py).
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "overeager.storage.StaticStorage"},
}
WHITENOISE_USE_FINDERS = True
# Hashed names are immutable; without the manifest's hash a file is revalidated after a minute.
WHITENOISE_MAX_AGE = 60

# Production hardening; `manage.py check --deploy` runs clean with DEBUG=0.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
