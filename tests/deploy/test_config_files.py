"""deploy/env.example, nginx and systemd files agree with the code."""

import configparser
import re

from django.conf import settings

from .conftest import DEPLOY, ROOT

ENV_CALL = re.compile(r"\benv(?:bool|int|float|decimal|list)?\(\s*\"([A-Z][A-Z0-9_]*)\"")


def documented_variables() -> set[str]:
    lines = (DEPLOY / "env.example").read_text().splitlines()
    return {match.group(1) for line in lines if (match := re.match(r"#?([A-Z][A-Z0-9_]*)=", line))}


def test_env_example_lists_every_variable_settings_reads():
    read = set(ENV_CALL.findall((ROOT / "config" / "settings.py").read_text()))

    assert len(read) > 30
    assert read - documented_variables() == set()


def test_env_example_lists_the_gunicorn_and_compose_variables():
    gunicorn = set(re.findall(r"os\.environ\.get\(\"([A-Z_]+)\"", (DEPLOY / "gunicorn.conf.py").read_text()))
    compose = set(re.findall(r"\$\{([A-Z_]+)[:}]", (DEPLOY / "compose.yaml").read_text()))

    assert {"GUNICORN_BIND", "POSTGRES_PASSWORD", "FINEGRAIN_DOMAIN"} <= gunicorn | compose
    assert (gunicorn | compose) - documented_variables() == set()


def test_env_example_documents_each_variable_with_a_default():
    # Each variable, or a group of variables on consecutive lines, follows comment lines that give a default.
    comment: list[str] = []
    previous_was_variable = False
    for line in (DEPLOY / "env.example").read_text().splitlines():
        if re.match(r"#?[A-Z][A-Z0-9_]*=", line):
            assert re.search(r"\b(Default|Defaults|No default)\b", " ".join(comment)), line
            previous_was_variable = True
        else:
            comment = comment + [line] if line.startswith("#") and not previous_was_variable else [line]
            previous_was_variable = False


def test_nginx_accepts_the_largest_upload_django_does():
    conf = (DEPLOY / "nginx" / "finegrain.conf").read_text()
    megabytes = int(re.search(r"client_max_body_size (\d+)m;", conf).group(1))

    limit = settings.FINEGRAIN_MAX_UPLOAD_BYTES
    assert limit < megabytes * 1024 * 1024 <= limit + (2 << 20)


def test_nginx_passes_the_headers_django_trusts():
    conf = (DEPLOY / "nginx" / "finegrain.conf").read_text()

    assert "proxy_set_header X-Forwarded-Proto https;" in conf
    assert "proxy_set_header X-Real-IP $remote_addr;" in conf
    assert "alias ${NGINX_STATIC_ROOT};" in conf and "ssl_certificate ${NGINX_TLS_CERT};" in conf
    assert "Strict-Transport-Security" not in conf  # Django sets HSTS (SECURE_HSTS_SECONDS).


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string((DEPLOY / "systemd" / name).read_text())
    return parser


def test_the_systemd_units_run_the_three_kinds_of_process():
    web, worker, beat = unit("finegrain-web.service"), unit("finegrain-worker@.service"), unit("finegrain-beat.service")

    assert "deploy/gunicorn.conf.py config.wsgi:application" in web["Service"]["ExecStart"]
    assert "--queues %i" in worker["Service"]["ExecStart"] and "--hostname %i@%H" in worker["Service"]["ExecStart"]
    assert " beat " in beat["Service"]["ExecStart"]
    for parsed in (web, worker, beat):
        assert parsed["Service"]["User"] == "finegrain"
        assert parsed["Install"]["WantedBy"] == "multi-user.target"
