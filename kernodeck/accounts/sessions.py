"""Session engine: Django's database sessions, stored in `accounts.Session`.

The extra columns (account, browser, address) let the account page list the sessions
of an account and end the others. The view layer puts the browser and address into the
session data at sign-in; this store copies them into columns when it saves.
"""

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
