"""`watch_chains` names the networks it will contact first, without leaking API keys."""

from io import StringIO

import pytest
from django.core.management import call_command

from kernodeck.payments.chains import http

# The command watches each network on a thread of its own, with its own connection.
pytestmark = pytest.mark.django_db(transaction=True)

KEY = "0123456789abcdef0123456789abcdef"


def test_each_network_is_named_with_its_url_before_any_pass(settings, monkeypatch):
    monkeypatch.setattr(http, "BACKOFF", 0)  # the refused connections fail without waiting
    settings.KERNODECK_BITCOIN_ESPLORA_URL = "http://127.0.0.1:9/api"
    settings.KERNODECK_ETHEREUM_RPC_URL = f"http://user:secret@127.0.0.1:9/v3/{KEY}"
    settings.KERNODECK_TRON_API_URL = f"http://127.0.0.1:9/?apikey={KEY}"
    out = StringIO()

    call_command("watch_chains", "--once", stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[:5] == [
        "bitcoin: http://127.0.0.1:9/api",
        "litecoin: no chain API configured",
        "ethereum: http://127.0.0.1:9/v3/…",
        "tron: http://127.0.0.1:9/",
        "solana: no chain API configured",
    ]
    assert lines[5].startswith("network=bitcoin error=")  # contacted only after saying so
    assert KEY not in out.getvalue() and "secret" not in out.getvalue()
