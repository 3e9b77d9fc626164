from django.contrib import messages
from django.contrib.auth import login, logout, update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.utils.translation import check_for_language, ngettext
from django.utils.translation import gettext as _
from django.views import i18n as i18n_views
from django.views.decorators.http import require_POST

from kernodeck.accounts import selectors, services
from kernodeck.accounts.forms import (
    ApiTokenForm,
    NewPasswordForm,
    PasswordChangeForm,
    ProfileForm,
    RegistrationForm,
    SignInForm,
    SshKeyForm,
)
from kernodeck.accounts.sessions import IP_KEY, USER_AGENT_KEY
from kernodeck.core.errors import ServiceError, Throttled
from kernodeck.core.forms import add_service_error
from kernodeck.core.requests import client_ip

NEW_TOKEN_KEY = "_kd_new_token"  # noqa: S105 - a session key name


def _next_url(request, default: str) -> str:
    candidate = request.POST.get("next") or request.GET.get("next") or ""
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return default


def _landing(user) -> str:
    """Where a sign-in without `next` leads: operators to the back-office landing page."""
    if user.is_staff and (user.is_superuser or user.get_all_permissions()):
        return reverse("admin:index")
    return reverse("accounts:account")


def _sign_in(request, user) -> None:
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    request.session[USER_AGENT_KEY] = request.headers.get("User-Agent", "")[:300]
    request.session[IP_KEY] = client_ip(request)
    services.account_language_set(user=user, language=translation.get_language())


@require_POST
def language_set(request):
    """Django's language switch, which also remembers the choice for a signed-in account."""
    response = i18n_views.set_language(request)
    language = request.POST.get("language", "")
    if request.user.is_authenticated and check_for_language(language):
        services.account_language_set(user=request.user, language=language)
    return response


def register(request):
    """New address or not, an accepted registration ends on the sign-in page with one
    message and signs nobody in: the answer never confirms that an account exists."""
    if request.user.is_authenticated:
        return redirect(_next_url(request, reverse("accounts:account")))
    form = RegistrationForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            services.account_register(
                **form.cleaned_data,
                ip_address=client_ip(request),
                language=translation.get_language(),
            )
        except ServiceError as exc:
            add_service_error(form, exc)
            status = exc.status if isinstance(exc, Throttled) else 200
        else:
            messages.info(request, services.registration_answer_message())
            target = reverse("accounts:signin")
            next_url = _next_url(request, "")
            if next_url:
                target += "?" + urlencode({"next": next_url})
            return redirect(target)
    return render(
        request,
        "accounts/register.html",
        {"form": form, "next": _next_url(request, "")},
        status=status,
    )


def signin(request):
    if request.user.is_authenticated:
        return redirect(_next_url(request, _landing(request.user)))
    form = SignInForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            user = services.account_authenticate(
                email=form.cleaned_data["email"],
                password=form.cleaned_data["password"],
                ip_address=client_ip(request),
                request=request,
            )
        except ServiceError as exc:
            form.add_error(None, exc.message)
            status = exc.status if isinstance(exc, Throttled) else 200
        else:
            _sign_in(request, user)
            return redirect(_next_url(request, _landing(user)))
    return render(
        request,
        "accounts/signin.html",
        {"form": form, "next": _next_url(request, "")},
        status=status,
    )


@require_POST
def signout(request):
    logout(request)
    messages.info(request, _("You are signed out."))
    return redirect("home")


def _account_page(request, **forms):
    context = {
        # Where the customer came from (an order's "add an SSH key"): this site's pages only.
        "return_url": _next_url(request, ""),
        "profile_form": ProfileForm(
            initial={"first_name": request.user.first_name, "last_name": request.user.last_name}
        ),
        "password_form": PasswordChangeForm(),
        "token_form": ApiTokenForm(),
        "ssh_key_form": SshKeyForm(),
        "sessions": selectors.sessions_active_for(user=request.user),
        "current_session_key": request.session.session_key,
        "tokens": selectors.api_tokens_for(user=request.user),
        "ssh_keys": selectors.ssh_keys_for(user=request.user),
        "new_token": request.session.pop(NEW_TOKEN_KEY, None),
    }
    context.update(forms)
    return render(request, "accounts/account.html", context)


@login_required
def account(request):
    return _account_page(request)


@login_required
@require_POST
def profile_update(request):
    form = ProfileForm(request.POST)
    if form.is_valid():
        try:
            services.profile_update(user=request.user, **form.cleaned_data)
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            messages.success(request, _("Your profile is saved."))
            return redirect(reverse("accounts:account") + "#profile")
    return _account_page(request, profile_form=form)


@login_required
@require_POST
def password_change(request):
    form = PasswordChangeForm(request.POST)
    if form.is_valid():
        try:
            user = services.password_change(user=request.user, **form.cleaned_data)
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            # Keeps this browser signed in; every other session stops being valid.
            update_session_auth_hash(request, request.user)
            if user.api_tokens_revoked:
                messages.success(
                    request,
                    ngettext(
                        "Your password is changed. Other browsers have been signed out and "
                        "your %(n)d API token has been revoked.",
                        "Your password is changed. Other browsers have been signed out and "
                        "your %(n)d API tokens have been revoked.",
                        user.api_tokens_revoked,
                    )
                    % {"n": user.api_tokens_revoked},
                )
            else:
                messages.success(
                    request, _("Your password is changed. Other browsers have been signed out.")
                )
            return redirect(reverse("accounts:account") + "#password")
    return _account_page(request, password_form=form)


@login_required
@require_POST
def sessions_end_others(request):
    ended = services.sessions_end_others(
        user=request.user, current_session_key=request.session.session_key
    )
    messages.success(request, _("Signed out of %(n)d other session(s).") % {"n": ended})
    return redirect(reverse("accounts:account") + "#sessions")


@login_required
@require_POST
def token_create(request):
    form = ApiTokenForm(request.POST)
    if form.is_valid():
        try:
            _token, raw = services.api_token_create(user=request.user, **form.cleaned_data)
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            # Shown on the next page view only, then gone from the session.
            request.session[NEW_TOKEN_KEY] = raw
            return redirect(reverse("accounts:account") + "#tokens")
    return _account_page(request, token_form=form)


@login_required
def token_revoke(request, token_id: int):
    token = selectors.api_token_get(user=request.user, token_id=token_id)
    if token is None:
        return render(request, "errors/404.html", status=404)
    if request.method == "POST":
        services.api_token_revoke(user=request.user, token_id=token.pk)
        messages.success(request, _("Token “%(name)s” is revoked.") % {"name": token.name})
        return redirect(reverse("accounts:account") + "#tokens")
    return render(
        request,
        "confirm.html",
        {
            "title": _("Revoke this token?"),
            "body": _(
                "Programs using “%(name)s” (%(prefix)s…) will be refused from now on. "
                "This cannot be undone."
            )
            % {"name": token.name, "prefix": token.prefix},
            "confirm_label": _("Revoke token"),
            "cancel_label": _("Keep the token"),
            "cancel_url": reverse("accounts:account") + "#tokens",
        },
    )


@login_required
@require_POST
def ssh_key_add(request):
    form = SshKeyForm(request.POST)
    if form.is_valid():
        try:
            services.ssh_key_add(user=request.user, **form.cleaned_data)
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            messages.success(request, _("SSH key added."))
            return redirect(_next_url(request, reverse("accounts:account") + "#ssh-keys"))
    return _account_page(request, ssh_key_form=form)


@login_required
def ssh_key_remove(request, key_id: int):
    key = selectors.ssh_key_get(user=request.user, key_id=key_id)
    if key is None:
        return render(request, "errors/404.html", status=404)
    if request.method == "POST":
        services.ssh_key_remove(user=request.user, key_id=key.pk)
        messages.success(request, _("SSH key “%(name)s” removed.") % {"name": key.name})
        return redirect(reverse("accounts:account") + "#ssh-keys")
    return render(
        request,
        "confirm.html",
        {
            "title": _("Remove this SSH key?"),
            "body": _("“%(name)s” (%(fingerprint)s) will no longer be installed on new rentals.")
            % {"name": key.name, "fingerprint": key.fingerprint},
            "confirm_label": _("Remove key"),
            "cancel_label": _("Keep the key"),
            "cancel_url": reverse("accounts:account") + "#ssh-keys",
        },
    )


def password_new(request, uidb64: str, token: str):
    """The single-use page of a new-password link that staff e-mailed after checking who
    asked ("I can't sign in"). Not a self-service reset: nothing here sends a link."""
    user = services.password_link_user(uidb64=uidb64, token=token)
    if user is None:
        return render(
            request,
            "accounts/password_new.html",
            {"dead": services.password_link_dead_message()},
            status=404,
        )
    form = NewPasswordForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.password_set_with_link(
                uidb64=uidb64,
                token=token,
                new_password=form.cleaned_data["new_password"],
                ip_address=client_ip(request),
            )
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            logout(request)
            messages.success(request, _("Your new password is set. Sign in with it."))
            return redirect("accounts:signin")
    return render(
        request,
        "accounts/password_new.html",
        {"form": form, "email": user.email},
        status=422 if form.is_bound and form.errors else 200,
    )


def backoffice_login(request):
    """The admin's own login form would bypass throttling: send operators to ours.

    An account that is signed in already was refused by the back-office: a 403, not a
    trip back to a sign-in page that would send it here again.
    """
    if request.user.is_authenticated:
        raise PermissionDenied
    target = request.GET.get("next") or reverse("admin:index")
    return redirect(f"{reverse('accounts:signin')}?{urlencode({'next': target})}")
