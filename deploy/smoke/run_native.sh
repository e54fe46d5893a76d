#!/usr/bin/env bash
# The production stack, natively (no Docker): nginx with TLS in front of gunicorn, a Celery worker on all three
# queues and Celery beat, against this machine's PostgreSQL (scratch database finegrain_smoke) and Redis (db 14),
# all configured from the files in deploy/. Then a smoke test through nginx over HTTPS, and everything stopped.
#
#   bash deploy/smoke/run_native.sh        # exit 0: all checks passed; anything else: a check or a step failed
#
# Needs: the project's virtualenv (.venv, or FINEGRAIN_PYTHON), PostgreSQL on 127.0.0.1:5432 reachable as postgres
# without a password, Redis on 127.0.0.1:6379, curl and openssl; nginx is installed from Debian if missing (root).
# SMOKE_KEEP=1 keeps the temporary directory (logs, rendered configs) for a look afterwards.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PYTHON="${FINEGRAIN_PYTHON:-$ROOT/.venv/bin/python}"
VENV_BIN="$(dirname "$PYTHON")"
PG_HOST=127.0.0.1 PG_PORT=5432 PG_USER=postgres
SMOKE_DB=finegrain_smoke
REDIS_URL="redis://127.0.0.1:6379/14"
STARTED=$SECONDS
PIDS=()

say() { printf '[smoke %3ds] %s\n' "$((SECONDS - STARTED))" "$*"; }
fail() { say "FAIL: $*"; exit 1; }

# --- Tools ---------------------------------------------------------------------------------------------------------
NGINX="$(command -v nginx || true)"
[ -z "$NGINX" ] && [ -x /usr/sbin/nginx ] && NGINX=/usr/sbin/nginx
if [ -z "$NGINX" ]; then
    say "installing nginx-light from Debian"
    timeout 300 apt-get update -qq
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq nginx-light >/dev/null
    NGINX=/usr/sbin/nginx
fi
for tool in curl openssl setsid; do command -v "$tool" >/dev/null || fail "$tool is missing"; done
[ -x "$PYTHON" ] || fail "no Python at $PYTHON (make install, or set FINEGRAIN_PYTHON)"

TMP="$(mktemp -d /tmp/finegrain-smoke.XXXXXX)"
chmod 755 "$TMP"  # nginx's workers run as an unprivileged user and read the static files from here.

# --- Teardown, whatever happens ----------------------------------------------------------------------------------
stop_group() {  # TERM the process group we started, wait up to 15 s, then KILL it.
    local pid=$1
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
    kill -KILL -- "-$pid" 2>/dev/null || true
}
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do stop_group "$pid"; done
    if [ "$status" -ne 0 ]; then
        for log in "$TMP"/*.log; do
            [ -f "$log" ] || continue
            echo "----- last lines of $(basename "$log")"
            tail -n 25 "$log"
        done
    fi
    timeout 30 "$PYTHON" - "$SMOKE_DB" "$REDIS_URL" <<'EOF' || say "could not drop $SMOKE_DB or flush Redis db 14"
import sys, psycopg, redis
with psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres", autocommit=True,
                     connect_timeout=5) as conn:
    conn.execute(f'DROP DATABASE IF EXISTS "{sys.argv[1]}" WITH (FORCE)')
redis.Redis.from_url(sys.argv[2], socket_timeout=5).flushdb()
EOF
    if [ "${SMOKE_KEEP:-0}" = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
    say "$([ "$status" -eq 0 ] && echo PASSED || echo "FAILED (exit $status)") in $((SECONDS - STARTED)) s"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- Scratch database, Redis db, certificate, ports ---------------------------------------------------------------
say "scratch database $SMOKE_DB and Redis db 14"
timeout 30 "$PYTHON" - "$SMOKE_DB" "$REDIS_URL" <<'EOF'
import sys, psycopg, redis
with psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres", autocommit=True,
                     connect_timeout=5) as conn:
    conn.execute(f'DROP DATABASE IF EXISTS "{sys.argv[1]}" WITH (FORCE)')
    conn.execute(f'CREATE DATABASE "{sys.argv[1]}"')
redis.Redis.from_url(sys.argv[2], socket_timeout=5).flushdb()
EOF

say "self-signed certificate"
timeout 30 openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -keyout "$TMP/privkey.pem" -out "$TMP/fullchain.pem" 2>"$TMP/openssl.log"

read -r WEB_PORT HTTP_PORT HTTPS_PORT < <("$PYTHON" -c '
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
for s in socks: s.close()')
HTTPS="https://127.0.0.1:$HTTPS_PORT"

# --- The application's environment, as deploy/env.example describes it --------------------------------------------
APP_ENV=(
    PATH="$VENV_BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    HOME="$TMP" LANG=C.UTF-8 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
    DJANGO_SETTINGS_MODULE=config.settings
    DEBUG=false
    SECRET_KEY="$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(64))')"
    ALLOWED_HOSTS=127.0.0.1,localhost
    SITE_URL="$HTTPS"
    FINEGRAIN_HTTPS=true
    DATABASE_URL="postgres://$PG_USER@$PG_HOST:$PG_PORT/$SMOKE_DB"
    CELERY_BROKER_URL="$REDIS_URL"
    CACHE_URL="$REDIS_URL"
    STATIC_ROOT="$TMP/static"
    MEDIA_ROOT="$TMP/media"
    FINEGRAIN_DATA_DIR="$TMP/var"
    LOG_FORMAT=json
    FINEGRAIN_LOGIN_FAILURES_PER_USERNAME=3/15m
    GUNICORN_BIND="127.0.0.1:$WEB_PORT"
    GUNICORN_WORKERS=2
)
app() { env -i "${APP_ENV[@]}" "$@"; }
start() {  # start NAME CMD...: in its own process group, output to $TMP/NAME.log
    local name=$1; shift
    (cd "$ROOT" && exec setsid env -i "${APP_ENV[@]}" "$@" >"$TMP/$name.log" 2>&1) &
    PIDS+=($!)
}

cd "$ROOT"
say "migrate"
app timeout 180 "$PYTHON" manage.py migrate --no-input >"$TMP/migrate.log" 2>&1 || fail "migrate"
say "collectstatic into $TMP/static"
app timeout 120 "$PYTHON" manage.py collectstatic --no-input >"$TMP/collectstatic.log" 2>&1 || fail "collectstatic"
SMOKE_PASSWORD="$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(18))')"
app DJANGO_SUPERUSER_USERNAME=smoke DJANGO_SUPERUSER_PASSWORD="$SMOKE_PASSWORD" DJANGO_SUPERUSER_EMAIL=smoke@localhost \
    timeout 60 "$PYTHON" manage.py createsuperuser --no-input >"$TMP/createsuperuser.log" 2>&1 || fail "createsuperuser"
say "check --deploy"
app timeout 60 "$PYTHON" manage.py check --deploy --fail-level WARNING >"$TMP/check.log" 2>&1 || fail "check --deploy"

# --- Processes -------------------------------------------------------------------------------------------------------
say "gunicorn on 127.0.0.1:$WEB_PORT, Celery worker (default, assist, crowd) and beat"
start gunicorn "$VENV_BIN/gunicorn" --config deploy/gunicorn.conf.py config.wsgi:application
start worker "$VENV_BIN/celery" -A config worker -Q default,assist,crowd -n smoke@%h --concurrency 1 \
    --loglevel INFO --without-mingle --without-gossip
start beat "$VENV_BIN/celery" -A config beat --loglevel INFO \
    --schedule "$TMP/celerybeat-schedule" --pidfile "$TMP/beat.pid"

say "nginx on 127.0.0.1:$HTTP_PORT (HTTP) and :$HTTPS_PORT (HTTPS), config rendered from deploy/nginx/finegrain.conf"
mkdir -p "$TMP/nginx-temp" && chmod 777 "$TMP/nginx-temp"
NGINX_SERVER_NAME="127.0.0.1 localhost" NGINX_UPSTREAM="127.0.0.1:$WEB_PORT" NGINX_TLS_CERT="$TMP/fullchain.pem" \
NGINX_TLS_KEY="$TMP/privkey.pem" NGINX_STATIC_ROOT="$TMP/static/" NGINX_HTTP_PORT="127.0.0.1:$HTTP_PORT" \
NGINX_HTTPS_PORT="127.0.0.1:$HTTPS_PORT" \
    "$PYTHON" - "$ROOT/deploy/nginx/finegrain.conf" "$TMP/finegrain.conf" <<'EOF'
# What envsubst does, for the ${NGINX_*} names only; nginx's own $variables stay.
import os, re, sys
text = open(sys.argv[1]).read()
rendered = re.sub(r"\$\{(NGINX_[A-Z_]+)\}", lambda m: os.environ[m.group(1)], text)
open(sys.argv[2], "w").write(rendered)
EOF
cat >"$TMP/nginx.conf" <<EOF
worker_processes 1;
pid $TMP/nginx.pid;
error_log $TMP/nginx-error.log warn;
events { worker_connections 128; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log $TMP/nginx-access.log;
    client_body_temp_path $TMP/nginx-temp/body;
    proxy_temp_path $TMP/nginx-temp/proxy;
    fastcgi_temp_path $TMP/nginx-temp/fastcgi;
    uwsgi_temp_path $TMP/nginx-temp/uwsgi;
    scgi_temp_path $TMP/nginx-temp/scgi;
    include $TMP/finegrain.conf;
}
EOF
timeout 30 "$NGINX" -t -q -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/nginx-error.log" >"$TMP/nginx-test.log" 2>&1 \
    || { cat "$TMP/nginx-test.log"; fail "nginx -t rejects the rendered configuration"; }
start nginx "$NGINX" -p "$TMP/" -c "$TMP/nginx.conf" -e "$TMP/nginx-error.log" -g "daemon off;"

# --- Wait until everything is up (bounded) --------------------------------------------------------------------------
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local limit=$1 what=$2; shift 2
    local until=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$until" ] || fail "$what not ready within $limit s"
        for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null || fail "a process exited early (pid $pid)"; done
        sleep 0.5
    done
}
CURL=(curl --silent --show-error --insecure --max-time 10)
wait_for 60 "gunicorn behind nginx" "${CURL[@]}" --fail "$HTTPS/health/"
wait_for 60 "the Celery worker" grep -q " ready\\." "$TMP/worker.log"
wait_for 30 "Celery beat" grep -q "beat: Starting" "$TMP/beat.log"
say "all processes up"

# --- The smoke test ---------------------------------------------------------------------------------------------------
check_python() {  # check_python DESCRIPTION FILE PYTHON-SNIPPET (the snippet reads FILE as `text`)
    "$PYTHON" -c "import json, sys; text = open(sys.argv[1], encoding='utf-8', errors='replace').read(); $3" "$2" \
        || fail "$1"
    say "ok: $1"
}

# 1. /health/ through nginx: 200 and every check ok, with the real broker.
code=$("${CURL[@]}" -o "$TMP/health.json" -w '%{http_code}' "$HTTPS/health/")
[ "$code" = 200 ] || fail "/health/ answered $code: $(cat "$TMP/health.json")"
check_python "/health/ is 200 with database, broker (redis) and embedding model ok" "$TMP/health.json" '
body = json.loads(text)
assert body["status"] == "ok", body
assert set(body["checks"]) == {"database", "broker", "embedding_model"}, body
assert all(check["status"] == "ok" for check in body["checks"].values()), body
assert body["checks"]["broker"]["mode"] == "redis", body'

# 2. The login page renders over HTTPS with the production headers.
code=$("${CURL[@]}" -c "$TMP/cookies.txt" -D "$TMP/login.headers" -o "$TMP/login.html" -w '%{http_code}' \
    "$HTTPS/accounts/login/")
[ "$code" = 200 ] || fail "the login page answered $code"
check_python "the login page renders (form with CSRF token)" "$TMP/login.html" '
assert "<h1>Log in</h1>" in text and "name=\"csrfmiddlewaretoken\"" in text, text[:500]'
check_python "HSTS, CSP with script-src 'self', Secure cookies on the login page" "$TMP/login.headers" '
headers = text.lower()
assert "strict-transport-security: max-age=31536000" in headers, text
assert "content-security-policy:" in headers and "script-src " + chr(39) + "self" + chr(39) in headers, text
cookie = [line for line in headers.splitlines() if line.startswith("set-cookie: csrftoken=")]
assert cookie and "; secure" in cookie[0], text'

# 3. A static file, at the hashed name the page links to, served by nginx itself.
CSS_PATH=$("$PYTHON" -c '
import re, sys
print(re.search(r"href=\"(/static/finegrain/app\.[0-9a-f]{12}\.css)\"", open(sys.argv[1]).read()).group(1))' \
    "$TMP/login.html") || fail "the login page links no hashed app.css (ManifestStaticFilesStorage)"
code=$("${CURL[@]}" -D "$TMP/static.headers" -o "$TMP/app.css" -w '%{http_code}' "$HTTPS$CSS_PATH")
[ "$code" = 200 ] || fail "$CSS_PATH answered $code"
check_python "static $CSS_PATH served by nginx (X-Finegrain-Static), immutable, text/css" "$TMP/static.headers" '
headers = text.lower()
assert "x-finegrain-static: nginx" in headers, text
assert "cache-control: public, max-age=31536000, immutable" in headers, text
assert "content-type: text/css" in headers, text'
cmp -s "$TMP/app.css" "$TMP/static${CSS_PATH#/static}" || fail "the served app.css differs from the collected one"

# 4. Plain HTTP only redirects to HTTPS.
code=$("${CURL[@]}" -D "$TMP/http.headers" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HTTP_PORT/accounts/login/")
[ "$code" = 301 ] || fail "plain HTTP answered $code instead of 301"
check_python "plain HTTP answers 301 to https://" "$TMP/http.headers" '
location = [line for line in text.splitlines() if line.lower().startswith("location:")]
assert location and location[0].split(":", 1)[1].strip().startswith("https://127.0.0.1/accounts/login/"), text'

# 5. Logging in through nginx works (CSRF origin check and Secure cookies behind the proxy), and the admin opens.
CSRF=$(awk '$6 == "csrftoken" { print $7 }' "$TMP/cookies.txt")
[ -n "$CSRF" ] || fail "no csrftoken cookie"
code=$("${CURL[@]}" -b "$TMP/cookies.txt" -c "$TMP/cookies.txt" -o /dev/null -D "$TMP/post.headers" -w '%{http_code}' \
    -H "Origin: $HTTPS" -H "Referer: $HTTPS/accounts/login/" \
    --data-urlencode "csrfmiddlewaretoken=$CSRF" --data-urlencode "username=smoke" \
    --data-urlencode "password=$SMOKE_PASSWORD" "$HTTPS/accounts/login/")
[ "$code" = 302 ] || fail "logging in answered $code instead of 302"
code=$("${CURL[@]}" -b "$TMP/cookies.txt" -o "$TMP/admin.html" -w '%{http_code}' "$HTTPS/admin/")
[ "$code" = 200 ] && grep -q "Site administration" "$TMP/admin.html" || fail "the admin answered $code after logging in"
say "ok: log-in through nginx, then /admin/ for a superuser"

# 6. Failed log-ins are counted in Redis across gunicorn's workers: the 4th with FAILURES_PER_USERNAME=3 gets 429.
# A fresh visitor: logging in above rotated the CSRF token of the first one.
"${CURL[@]}" -c "$TMP/cookies2.txt" -o /dev/null "$HTTPS/accounts/login/" || fail "the login page, second visitor"
CSRF=$(awk '$6 == "csrftoken" { print $7 }' "$TMP/cookies2.txt")
for attempt in 1 2 3 4; do
    code=$("${CURL[@]}" -b "$TMP/cookies2.txt" -o /dev/null -w '%{http_code}' \
        -H "Origin: $HTTPS" -H "Referer: $HTTPS/accounts/login/" \
        --data-urlencode "csrfmiddlewaretoken=$CSRF" --data-urlencode "username=nobody" \
        --data-urlencode "password=wrong-$attempt" "$HTTPS/accounts/login/")
    expected=$([ "$attempt" -le 3 ] && echo 200 || echo 429)
    [ "$code" = "$expected" ] || fail "failed log-in $attempt answered $code instead of $expected"
done
say "ok: the 4th failed log-in for one username is refused with 429"

# 7. The worker consumes the three queues; beat is running.
# Naming the worker lets inspect return as soon as it answers instead of waiting out the timeout for others.
WORKER_NAME="smoke@$("$PYTHON" -c 'import socket; print(socket.gethostname())')"
app timeout 30 "$VENV_BIN/celery" -A config inspect active_queues --json --timeout 10 -d "$WORKER_NAME" \
    >"$TMP/queues.json" 2>"$TMP/inspect.log" || fail "celery inspect active_queues"
check_python "the Celery worker answers and consumes default, assist and crowd" "$TMP/queues.json" '
replies = json.loads(text.strip().splitlines()[-1])
queues = {queue["name"] for reply in replies.values() for queue in reply}
assert {"default", "assist", "crowd"} <= queues, replies'
kill -0 "${PIDS[2]}" 2>/dev/null || fail "Celery beat exited"
say "ok: Celery beat is running"

# 8. LOG_FORMAT=json: gunicorn's and Django's lines are JSON objects.
check_python "gunicorn logs one JSON object a line" "$TMP/gunicorn.log" '
lines = [line for line in text.splitlines() if line.startswith("{")]
assert lines and all(isinstance(json.loads(line), dict) for line in lines), text[-2000:]
assert any("/health/" in json.loads(line).get("message", "") for line in lines), text[-2000:]'

say "all checks passed"
