"""The desk's rental rows, made in the view in one pass (issue 27): the same HTML as the
template's loop made (kept below as the reference), in English and in Spanish, with each
rental's link and every customer-provided value escaped."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.template import engines
from django.urls import reverse
from django.utils import translation

from kernodeck.core import clock
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import alerts, selectors
from kernodeck.provisioning.models import Alert, AlertKind, Allocation
from tests.budgets.operations_data import build

pytestmark = pytest.mark.django_db

NASTY = "<script>alert('x')</script> & \"quoted\" 100%"

# The desk template's row loop before the rows were made in the view.
REFERENCE = engines["django"].from_string(
    "{% load i18n order_badges rental_clock %}"
    '{% translate "Rental" as label_rental %}{% translate "State" as label_state %}'
    '{% translate "Waiting" as label_waiting %}{% translate "Offer" as label_offer %}'
    '{% translate "GPUs" as label_gpus %}{% translate "Preparation" as label_preparation %}'
    '{% translate "Allocated" as label_allocated %}'
    '{% translate "Customer SSH keys" as label_customer_ssh_keys %}'
    '{% translate "Ends" as label_ends %}'
    """{% for row in rows %}<tr>
      <td data-label="{{ label_rental }}"><a href="{{ row.url }}"><code class="ref">{{ row.order.reference }}</code></a><br><span class="muted small">{{ row.order.owner.email }}</span></td>
      <td data-label="{{ label_state }}">{% rental_badge row.order %}{% if row.order.rental_reason %}<br><span class="small">{% translate row.order.rental_reason %}</span>{% endif %}</td>
      <td data-label="{{ label_waiting }}">{{ row.waiting|rental_duration }}</td>
      <td data-label="{{ label_offer }}">{{ row.order.gpu_model }}</td>
      <td class="num" data-label="{{ label_gpus }}">{{ row.order.gpus }}</td>
      <td data-label="{{ label_preparation }}">{{ row.order.get_preparation_display }}</td>
      <td data-label="{{ label_allocated }}">{% for a in row.allocation %}<code>{{ a.node }}</code> [{{ a.slots|join:", " }}]<br>{% empty %}<span class="muted">{% translate "none yet" %}</span>{% endfor %}</td>
      <td data-label="{{ label_customer_ssh_keys }}">{% for k in row.keys_short %}<code class="small">{{ k }}</code><br>{% empty %}<span class="badge bad">{% translate "no key" %}</span>{% endfor %}</td>
      <td data-label="{{ label_ends }}">{{ row.order.ends_at|date:"Y-m-d H:i"|default:"—" }}</td>
    </tr>{% endfor %}"""  # noqa: E501 - the template's lines as they were
)


def _reference_rows(state: str, language: str) -> str:
    rows = selectors.desk_rows(selectors.rentals_for_desk(state=state)[:300])
    for row in rows:
        row["url"] = reverse("desk:rental", args=[row["order"].reference])
        row["keys_short"] = [k if len(k) <= 22 else f"{k[:21]}…" for k in row["keys"]]
    with translation.override(language):
        return REFERENCE.render({"rows": rows})


def _tbody(html: str) -> str:
    return html.rsplit("<tbody>", 1)[1].split("</tbody>", 1)[0]


@pytest.fixture
def desk_data():
    data = build(8)
    rentals = list(Order.objects.order_by("reference"))
    # Customer-provided and operator-written values that need escaping.
    get_user_model().objects.filter(pk=rentals[0].owner_id).update(email="a&b'<i>\"@x.org")
    Order.objects.filter(pk=rentals[0].pk).update(
        gpu_model=NASTY, rental_reason=NASTY, ends_at=clock.now() + timedelta(days=2)
    )
    # A rental that ended without starting reads "Refunded".
    Order.objects.filter(pk=rentals[1].pk).update(
        rental_state=RentalState.ENDED, starts_at=None, rental_reason="No free slot."
    )
    return data, rentals


@pytest.mark.parametrize("language", ["en", "es"])
@pytest.mark.parametrize("state", ["", "ended", "active", "queued"])
def test_the_rows_are_the_templates_rows(client, desk_data, language, state):
    data, _rentals = desk_data
    client.force_login(data.operator)

    page = client.get("/backoffice/rentals/", {"state": state}, HTTP_ACCEPT_LANGUAGE=language)

    assert page.status_code == 200
    assert _tbody(page.content.decode()) == _reference_rows(state, language)


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", ['data-label="Waiting"', 'data-label="Customer SSH keys"', " d ", "Refunded"]),
        ("es", ['data-label="En espera"', 'data-label="Claves SSH del cliente"', "Reembolsado"]),
    ],
)
def test_the_rows_read_in_the_visitors_language_with_links_and_escaped_values(
    client, desk_data, language, words
):
    data, rentals = desk_data
    client.force_login(data.operator)

    html = client.get("/backoffice/rentals/?state=ended", HTTP_ACCEPT_LANGUAGE=language)
    html = _tbody(html.content.decode())
    html += _tbody(
        client.get("/backoffice/rentals/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    )

    for word in words:
        assert word in html, word
    assert f'href="{reverse("desk:rental", args=[rentals[0].reference])}"' in html
    assert "<script>" not in html and "<i>" not in html
    assert (
        "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;quoted&quot; 100%" in html
    )
    assert "a&amp;b&#x27;&lt;i&gt;&quot;@x.org" in html
    assert (
        len(re.findall(r"<tr>", html))
        == Order.objects.filter(
            rental_state__in=[
                RentalState.QUEUED,
                RentalState.PREPARING,
                RentalState.PROVISIONING_FAILED,
                RentalState.ENDED,
            ]
        ).count()
    )


def test_the_releases_waiting_read_one_line_per_rental_and_node(client):
    data = build(4)
    live = list(
        Allocation.objects.filter(released_at__isnull=True)
        .select_related("order", "slot__node")
        .order_by("order__reference")
    )
    asked = clock.now() - timedelta(minutes=30)
    Allocation.objects.filter(pk__in=[a.pk for a in live[:2]]).update(
        release_requested_at=asked, release_attempts=3, release_error=NASTY
    )
    # A second slot of the first rental on the same node: still one line.
    first = live[0]
    Allocation.objects.create(
        order=first.order,
        slot=first.slot.node.slots.exclude(pk=first.slot_id).first(),
        unit=2,
        allocated_at=asked,
        release_requested_at=asked,
    )
    client.force_login(data.operator)

    html = client.get("/backoffice/rentals/", HTTP_ACCEPT_LANGUAGE="es").content.decode()

    section = html.split('id="releases"', 1)[1].split("</section>", 1)[0]
    assert "Releases waiting" not in section  # in Spanish
    assert section.count("<tr>") == 3  # the header and two lines
    for allocation in live[:2]:
        link = reverse("desk:rental", args=[allocation.order.reference])
        assert f'<a href="{link}"><code class="ref">{allocation.order.reference}</code></a>' in (
            section
        )
        assert f"<code>{allocation.slot.node.name}</code>" in section
    assert section.count(f">{asked.strftime('%Y-%m-%d %H:%M')}</td>") == 2
    assert "&lt;script&gt;" in section and "<script>" not in section


# The desk template's alerts as they were written from alerts.alerts_open()'s instances.
ALERTS_REFERENCE = engines["django"].from_string(
    "{% load i18n %}"
    """<ul>{% for alert in alerts %}<li>
    <strong>{{ alert.get_kind_display }}</strong>{% if alert.node %} · <code>{{ alert.node.name }}</code>{% endif %}{% if alert.order %} · <a href="{% url 'desk:rental' alert.order.reference %}"><code class="ref">{{ alert.order.reference }}</code></a>{% endif %} · <span class="muted small">{{ alert.created_at|date:"Y-m-d H:i" }} UTC</span><br>
    {{ alert.message }}<br><span class="small">{% translate "What to do:" %} {{ alert.action }}</span>
    <form method="post" action="{% url 'desk:alert_ack' alert.pk %}" class="inline">{% csrf_token %}<button type="submit" class="small">{% translate "Acknowledge" %}</button></form>
  </li>{% endfor %}</ul>"""  # noqa: E501 - the template's lines as they were
)


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_open_alerts_read_as_the_templates_alerts_newest_first(client, language):
    data = build(4)
    rentals = list(Order.objects.order_by("reference"))
    now = clock.now()
    kinds = [kind for kind, _label in AlertKind.choices]
    for n in range(6):
        Alert.objects.create(
            kind=kinds[n % len(kinds)],
            key=f"cause-{n}",
            node=data.node if n % 2 else None,
            order=rentals[n % len(rentals)] if n % 3 else None,
            message=f"{NASTY} {n}",
            action=f"<b>Look</b> {n}",
            created_at=now - timedelta(minutes=n * 7 % 11),
            resolved_at=now if n == 4 else None,  # mended: not listed
            acknowledged_at=now if n == 5 else None,  # seen: not listed
        )
    client.force_login(data.operator)

    html = client.get("/backoffice/rentals/", HTTP_ACCEPT_LANGUAGE=language).content.decode()

    section = html.split('id="alerts"', 1)[1].split("</section>", 1)[0]
    listed = re.sub(r'value="[^"]*"', "", section.split("<ul>", 1)[1].split("</ul>", 1)[0])
    with translation.override(language):
        reference = ALERTS_REFERENCE.render(
            {"alerts": list(alerts.alerts_open()[:50]), "csrf_token": "x"}
        )
    assert listed == re.sub(r'value="[^"]*"', "", reference.split("<ul>", 1)[1].split("</ul>")[0])
    assert listed.count("<li>") == 4
    assert "<script>" not in listed and "&lt;b&gt;Look&lt;/b&gt; 3" in listed
