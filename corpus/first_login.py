"""An account made with a one-time password must choose its own password before anything else.

The flag is read from the database once, at log-in, and kept in the session: the check on every request after
that costs no query."""

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm
from django.contrib.auth.signals import user_logged_in
from django.core.exceptions import ValidationError
from django.dispatch import receiver
from django.shortcuts import redirect
from django.urls import reverse, reverse_lazy
from django.views.decorators.debug import sensitive_variables

from .models import PasswordChangeRequired

SESSION_KEY = "finegrain_must_change_password"


@receiver(user_logged_in)
def note_a_one_time_password(sender, request, user, **kwargs):
    if PasswordChangeRequired.objects.filter(user=user).exists():
        request.session[SESSION_KEY] = True


class RequirePasswordChange:
    """Sends a user who logged in with a one-time password to the password form, whatever they ask for."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.session.get(SESSION_KEY) and request.path not in (reverse("password_change"), reverse("logout")):
            return redirect("password_change")
        return self.get_response(request)


class RefuseUnchangedPassword:
    """Refuses the current password as the new one: "changing" a one-time password to itself would leave the
    manager who was shown it able to log in as its owner."""

    error_messages = {"password_unchanged": "Your new password must be different from your old one."}

    @sensitive_variables("password")
    def clean_new_password1(self):
        password = self.cleaned_data["new_password1"]
        if self.user.check_password(password):
            raise ValidationError(self.error_messages["password_unchanged"], code="password_unchanged")
        return password


class NewPasswordForm(RefuseUnchangedPassword, SetPasswordForm):
    """The first log-in's form: the person typed the one-time password a moment ago to log in, so it is not asked
    again. Django's password validators (AUTH_PASSWORD_VALIDATORS) apply as to any password."""

    error_messages = {**SetPasswordForm.error_messages, **RefuseUnchangedPassword.error_messages}


class ChangedPasswordForm(RefuseUnchangedPassword, PasswordChangeForm):
    """Any later change asks for the current password, as Django's own form does: whoever finds a session left
    open must not be able to take the account."""

    error_messages = {**PasswordChangeForm.error_messages, **RefuseUnchangedPassword.error_messages}


class PasswordChange(auth_views.PasswordChangeView):
    template_name = "registration/password_change.html"
    success_url = reverse_lazy("home")

    def get_form_class(self):
        return NewPasswordForm if self.request.session.get(SESSION_KEY) else ChangedPasswordForm

    def form_valid(self, form):
        response = super().form_valid(form)
        PasswordChangeRequired.objects.filter(user=self.request.user).delete()
        self.request.session.pop(SESSION_KEY, None)
        messages.success(self.request, "Your password is changed.")
        return response
