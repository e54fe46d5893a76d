"""One way to cut a list that grows with the project into pages: Django's Paginator, whose `get_page` answers a
page number that is not a number with the first page and one past the end with the last (never an error)."""

from django.core.paginator import Page, Paginator


def paginate(request, items, per_page: int, parameter: str = "page") -> tuple[Page, str]:
    """The requested page of `items`, and the request's other query parameters (urlencoded) for the page links."""
    page = Paginator(items, per_page).get_page(request.GET.get(parameter))
    query = request.GET.copy()
    query.pop(parameter, None)
    return page, query.urlencode()
