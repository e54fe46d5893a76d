"""The Django admin is the operators' tool: it shows every project's rows, so only superusers may open it.

Managers run their own projects from finegrain's pages; letting them into the admin would show them other projects'
objects (the admin's `r/<content type>/<id>/` shortcut alone redirects to any object's page and so names its
project).
"""

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError


class OperatorLoginForm(AdminAuthenticationForm):
    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "invalid_login": "Please enter the correct %(username)s and password for a superuser account. Note that both "
                         "fields may be case-sensitive.",
    }

    def confirm_login_allowed(self, user):
        super().confirm_login_allowed(user)
        if not user.is_superuser:
            raise ValidationError(self.error_messages["invalid_login"], code="invalid_login",
                                  params={"username": self.username_field.verbose_name})


class OperatorAdminSite(admin.AdminSite):
    login_form = OperatorLoginForm

    def has_permission(self, request):
        return request.user.is_active and request.user.is_superuser
