"""The admin's login form, throttled by the same limiter and counters as the dashboard's login.

Django's admin login has no throttle of its own. This form authenticates through allauth's
adapter, which consumes ``ACCOUNT_RATE_LIMITS["login_failed"]`` (per IP and per e-mail address)
before checking the password: failures on the admin and on the dashboard count together, and a
locked-out address is refused on both even with the right password. The admin's own rules
(active staff only) still apply after authentication.
"""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import get_adapter
from django.contrib.admin.forms import AdminAuthenticationForm


class ThrottledAdminAuthenticationForm(AdminAuthenticationForm):
    """``AdminAuthenticationForm`` whose password check goes through allauth's rate limit."""

    def clean(self) -> dict[str, Any]:
        email = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if email is not None and password:
            # Raises ValidationError("Too many failed login attempts...") once the limit is reached.
            self.user_cache = get_adapter(self.request).authenticate(self.request, email=email, password=password)
            if self.user_cache is None:
                raise self.get_invalid_login_error()
            self.confirm_login_allowed(self.user_cache)
        return self.cleaned_data
