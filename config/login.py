"""Log-in pages with a brake on password guessing, and the account backend that reads the logged-in user.

Only failed attempts count: a team starting its shift behind one office address must not lock itself out, while a
guesser is stopped after FINEGRAIN_LOGIN_FAILURES_PER_IP failures from one address (IPv6 by /64) or
FINEGRAIN_LOGIN_FAILURES_PER_USERNAME failures against one username, whichever comes first. django-ratelimit does
the counting, in fixed windows, in the default cache (shared through Redis in production).
"""

import math
import unicodedata
from functools import wraps

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.utils.translation import gettext_lazy as _
from django_ratelimit.core import get_usage
from rest_framework import authentication, exceptions

from corpus.internals import MARKER_ID, MARKER_TEXT, CompiledQuery

IP_GROUP = "finegrain.login.ip"
USERNAME_GROUP = "finegrain.login.username"


def client_ip(request) -> str:
    """The address a request came from (RATELIMIT_IP_META_KEY).

    Behind the proxy (FINEGRAIN_BEHIND_PROXY, implied by FINEGRAIN_HTTPS), nginx overwrites X-Real-IP with the peer
    it saw (deploy/nginx/finegrain.conf); gunicorn must then be reachable only through nginx, or the header could be
    forged. Without the proxy, the socket's peer.
    """
    if settings.SECURE_PROXY_SSL_HEADER and request.META.get("HTTP_X_REAL_IP"):
        return request.META["HTTP_X_REAL_IP"].strip()
    return request.META.get("REMOTE_ADDR") or "0.0.0.0"


def attempted_username(group: str, request) -> str:
    # The login form strips and NFKC-normalises usernames; case and spacing variants must share one counter.
    return unicodedata.normalize("NFKC", request.POST.get("username", "")).strip().casefold()


def _counters(request):
    return [
        (IP_GROUP, "ip", settings.FINEGRAIN_LOGIN_FAILURES_PER_IP),
        (USERNAME_GROUP, attempted_username, settings.FINEGRAIN_LOGIN_FAILURES_PER_USERNAME),
    ]


def rate_limited_login(view):
    """Wrap a login view: refuse a POST with 429 once a counter is full, count every POST that fails."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method != "POST":
            return view(request, *args, **kwargs)
        for group, key, rate in _counters(request):
            usage = get_usage(request, group=group, key=key, rate=rate, method="POST", increment=False)
            if usage is not None and usage["count"] >= usage["limit"]:
                return too_many_failures(request, usage["time_left"])
        response = view(request, *args, **kwargs)
        # Success redirects; a form shown again (200) is a failed attempt.
        if response.status_code == 200:
            for group, key, rate in _counters(request):
                get_usage(request, group=group, key=key, rate=rate, method="POST", increment=True)
        return response

    return wrapped


def too_many_failures(request, seconds_left: int):
    minutes = max(1, math.ceil(seconds_left / 60))
    response = render(request, "registration/login_limited.html", {"minutes": minutes}, status=429)
    response["Retry-After"] = str(max(1, seconds_left))
    return response


login_view = rate_limited_login(auth_views.LoginView.as_view())


# With the account's annotator row (none for managers), which every annotator request reads next
# (annotation.permissions.current_annotator).
_ACCOUNT = CompiledQuery(lambda pk: get_user_model()._default_manager.select_related("annotator").filter(pk=pk),
                         pk=MARKER_ID)


class AccountBackend(ModelBackend):
    """Django's ModelBackend, with the read of the logged-in user, made by every request that has a session, built
    once per process (corpus.internals): building it again each time cost more CPU than the rest of saving an
    answer's reads together (benchmarks/hit_profile.py). The user comes with its annotator row.

    settings.AUTHENTICATION_BACKENDS lists ModelBackend after this one, so that sessions made before keep their
    log-in; a wrong password stops here, since ModelBackend would only check the same password again.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None and password is not None:
            raise PermissionDenied
        return user

    def get_user(self, user_id):
        found = _ACCOUNT(pk=user_id)
        return found[0] if found and self.user_can_authenticate(found[0]) else None


def _token_with_user(key):
    from rest_framework.authtoken.models import Token

    return Token.objects.select_related("user", "user__annotator").filter(key=key)


_TOKEN = CompiledQuery(_token_with_user, key=MARKER_TEXT)


class TokenAuthentication(authentication.TokenAuthentication):
    """REST framework's token authentication, with the read of the token and its user (and the user's annotator row)
    built once per process (the read every API request makes first); the same refusals, in the same words."""

    def authenticate_credentials(self, key):
        found = _TOKEN(key=key)
        if not found:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token = found[0]
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)
