"""`manage.py check --deploy` is clean with the production variables set, and only with them."""

import secrets

from .conftest import run_manage

PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": secrets.token_urlsafe(64),
    "ALLOWED_HOSTS": "example.org",
    "FINEGRAIN_HTTPS": "true",
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/finegrain",
}


def test_it_passes_with_the_production_variables():
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout + result.stderr
    assert "WARNINGS" not in result.stdout + result.stderr


def test_it_fails_without_https():
    # The same check with FINEGRAIN_HTTPS off must complain: proves the test above can see a warning.
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env={**PRODUCTION, "FINEGRAIN_HTTPS": "false"})

    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "security.W004" in output and "security.W008" in output and "security.W012" in output
