"""The production settings, with a fast password hasher: 50 log-ins at PBKDF2's ~1 s each would take the whole
time budget of the load test on two cores. Used by the gunicorn the reliability tests start."""

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
