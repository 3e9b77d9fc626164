"""Session engine: Django's database sessions, stored in `accounts.Session`.

The extra columns (account, browser, address) let the account page list the sessions
of an account and end the others. The view layer puts the browser and address into the
session data at sign-in; this store copies them into columns when it saves.
"""

from importlib import import_module

from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore as DBStore

from kernodeck.core import clock
from kernodeck.core.requests import valid_ip

USER_AGENT_KEY = "_kd_user_agent"
IP_KEY = "_kd_ip"


class SessionStore(DBStore):
    @classmethod
    def get_model_class(cls):
        # Imported here, as Django's own db session backend does: the model names this store.
        from kernodeck.accounts.models import Session

        return Session

    def create_model_instance(self, data):
        obj = super().create_model_instance(data)
        try:
            obj.user_id = int(data.get("_auth_user_id"))
        except (TypeError, ValueError):
            obj.user_id = None
        obj.user_agent = (data.get(USER_AGENT_KEY) or "")[:300]
        obj.ip_address = valid_ip(data.get(IP_KEY))
        obj.last_seen = clock.now()
        return obj

    @classmethod
    def forget_ended(cls, keys) -> None:
        """Nothing to forget: this store reads the database alone (see cached_sessions)."""


def sessions_forget_ended(keys) -> None:
    """Tell the configured session engine that these sessions' rows were deleted (by a
    queryset, which its own `delete` does not see): the cached one marks them ended."""
    store = import_module(settings.SESSION_ENGINE).SessionStore
    forget = getattr(store, "forget_ended", None)
    if forget is not None:
        forget(keys)
