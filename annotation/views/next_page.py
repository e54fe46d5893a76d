"""Where a manager's form sends them back to: the page named by its `next` field, when that is a page of this
site."""

from urllib.parse import urlsplit

from django.http import HttpResponseRedirect
from django.utils.http import url_has_allowed_host_and_scheme


def next_page(request, default: str) -> str:
    """The posted `next` if it is a path from the site's root or a URL of this host (over HTTPS when the request
    is), else `default`. Another host would make the site an open redirect; a path without its leading slash would
    resolve against the form's own URL (or, in `redirect`, be looked up as a URL name)."""
    target = request.POST.get("next", "")
    parts = urlsplit(target)
    from_root = target.startswith("/") or bool(parts.scheme or parts.netloc)
    if from_root and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                     require_https=request.is_secure()):
        return target
    return default


def redirect_to_next(request, default: str) -> HttpResponseRedirect:
    # Never through `redirect`: a posted string is a URL, not a URL name to look up.
    return HttpResponseRedirect(next_page(request, default))
