from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotation.urls import work_urlpatterns
from corpus import first_login

from . import login
from .health import health

# The admin's own log-in form gets the same brake on password guessing as ours.
admin.site.login = login.rate_limited_login(admin.site.login)

urlpatterns = [
    path("work/", include(work_urlpatterns)),
    path("accounts/login/", login.login_view, name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", login_required(first_login.PasswordChange.as_view()), name="password_change"),
    path("admin/", admin.site.urls),
    path("health/", health, name="health"),
    path("api/", include("config.api_router")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api_schema"),
    # The split view serves Swagger UI's start-up script from its own URL (?script): no inline script for the CSP.
    # Signed-in users only, like the schema (SPECTACULAR_SETTINGS); a browser is sent to the log-in page.
    path("api/docs/", login_required(SpectacularSwaggerSplitView.as_view(url_name="api_schema",
                                                                         template_name="api/docs.html")),
         name="api_docs"),
    path("", include("assist.urls")),
    path("", include("exports.urls")),
    path("", include("annotation.urls")),
]
