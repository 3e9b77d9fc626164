"""Issue 23, item 15: an SSH key added from an order's prompt brings the customer back to
the order (a `next` of this site only), and the account's tables stack on phones."""

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from django.urls import reverse
from django.utils import translation

from kernodeck.accounts.models import SshKey
from tests.accounts.test_ssh_keys import openssh_public
from tests.factories import make_offer, make_settled_order, make_user

pytestmark = pytest.mark.django_db
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


@pytest.fixture(autouse=True)
def _back_to_the_default_language():
    """A request's language stays active in the thread: later tests expect the default."""
    yield
    translation.deactivate()


def _key():
    return openssh_public(ed25519.Ed25519PrivateKey.generate(), comment="laptop")


def test_the_orders_prompt_carries_the_order_as_next(client):
    order = make_settled_order(offer=make_offer(units_total=1))
    client.force_login(order.owner)

    page = client.get(reverse("orders:detail", args=[order.reference]), **EN).content.decode()

    assert 'id="needs-ssh-key"' in page
    assert f'href="/account/?next=/orders/{order.reference}/#ssh-keys">Add an SSH key</a>' in page


def test_the_account_page_keeps_the_way_back(client):
    order = make_settled_order(offer=make_offer(units_total=1))
    client.force_login(order.owner)
    back = f"/orders/{order.reference}/"

    page = client.get(reverse("accounts:account"), {"next": back}, **EN).content.decode()

    assert f'<a href="{back}">← Back to where you were</a>' in page
    assert f'<input type="hidden" name="next" value="{back}">' in page
    spanish = client.get(reverse("accounts:account"), {"next": back}, HTTP_ACCEPT_LANGUAGE="es")
    assert "← Volver a donde estabas</a>" in spanish.content.decode()


def test_adding_the_key_returns_to_the_order(client):
    order = make_settled_order(offer=make_offer(units_total=1))
    client.force_login(order.owner)
    back = f"/orders/{order.reference}/"

    response = client.post(
        reverse("accounts:ssh_key_add"), {"public_key": _key(), "name": "", "next": back}
    )

    assert response.status_code == 302
    assert response.url == back
    assert SshKey.objects.filter(user=order.owner).count() == 1
    page = client.get(back, **EN).content.decode()
    assert "SSH key added." in page
    assert 'id="needs-ssh-key"' not in page


@pytest.mark.parametrize(
    "elsewhere",
    [
        "https://evil.example/orders/",
        "//evil.example/orders/",
        "/\\evil.example",
        "javascript:alert(1)",
        "http://testserver.evil.example/",
    ],
)
def test_an_off_site_next_is_refused(client, elsewhere):
    user = make_user()
    client.force_login(user)

    page = client.get(reverse("accounts:account"), {"next": elsewhere}, **EN).content.decode()
    response = client.post(
        reverse("accounts:ssh_key_add"), {"public_key": _key(), "next": elsewhere}
    )

    assert "Back to where you were" not in page
    ssh_section = page.split('id="ssh-keys"')[1].split("</section>")[0]
    assert 'name="next"' not in ssh_section
    assert response.status_code == 302
    assert response.url == reverse("accounts:account") + "#ssh-keys"
    assert SshKey.objects.filter(user=user).count() == 1


def test_a_refused_key_keeps_the_way_back(client):
    user = make_user()
    client.force_login(user)

    response = client.post(
        reverse("accounts:ssh_key_add"),
        {"public_key": "ssh-rsa nonsense", "next": "/orders/KD-AAAA-BBBB/"},
        **EN,
    )

    page = response.content.decode()
    assert "not a valid OpenSSH public key" in page
    assert '<input type="hidden" name="next" value="/orders/KD-AAAA-BBBB/">' in page
    assert not SshKey.objects.exists()


def test_without_next_adding_a_key_stays_on_the_account(client):
    client.force_login(make_user())

    response = client.post(reverse("accounts:ssh_key_add"), {"public_key": _key()})

    assert response.url == reverse("accounts:account") + "#ssh-keys"


def test_the_account_and_ticket_tables_stack_on_phones(client):
    user = make_user()
    client.force_login(user)
    client.post(reverse("accounts:ssh_key_add"), {"public_key": _key()})
    client.post(reverse("accounts:token_create"), {"name": "ci"})

    account = client.get(reverse("accounts:account"), **EN).content.decode()

    assert account.count('<table class="stack">') == 3  # sessions, tokens, SSH keys
    for label in ("Browser", "Last activity", "Starts with", "Fingerprint", "Added"):
        assert f'data-label="{label}"' in account


def test_the_ticket_list_stacks_on_phones(client):
    from tests.support.helpers import problem_ticket

    user = make_user()
    problem_ticket(owner=user)
    client.force_login(user)

    page = client.get(reverse("support:list"), **EN).content.decode()

    assert '<table class="stack">' in page
    for label in ("Subject", "About", "Order", "Status", "Updated"):
        assert f'data-label="{label}"' in page
