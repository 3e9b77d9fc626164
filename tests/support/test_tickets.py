"""Tickets on the web and the API: guided kinds, secrets removed, threads, bad input."""

import uuid

import pytest
from django.core import mail
from django.urls import reverse

from kernodeck.core.errors import InvalidInput
from kernodeck.core.models import AuditEvent
from kernodeck.notifications.models import OutboxMessage
from kernodeck.support import services
from kernodeck.support.models import Attachment, Message, Ticket
from tests.factories import api_post, make_order, make_user
from tests.support.helpers import HF, make_agent, png_bytes, problem_ticket

pytestmark = pytest.mark.django_db


def test_api_problem_ticket_removes_a_token_and_says_so(api):
    response = api_post(
        api,
        "/tickets",
        {
            "kind": "problem",
            "subject": "Loading fails",
            "body": f"I ran huggingface-cli login --token {HF} and then it failed.",
            "fields": {"when": "loading", "first_error": "OSError: model not found"},
        },
    )
    assert response.status_code == 201
    data = response.json()
    assert data["kind"] == "problem"
    assert data["status"] == "open"
    assert data["order"] is None
    assert data["messages"][0]["author"] == "customer"
    assert data["messages"][0]["body"] == (
        "I ran huggingface-cli login --token [removed] and then it failed."
    )
    assert data["redactions"] == [
        {"kind": "huggingface_token", "label": "a Hugging Face token", "count": 1}
    ]
    assert data["fields"] == {"when": "loading", "first_error": "OSError: model not found"}
    # Nothing stored anywhere still holds the token.
    assert not Message.objects.filter(body__contains=HF).exists()
    assert HF not in str(AuditEvent.objects.values_list("data", flat=True))


def test_structured_fields_are_cleaned_too(api):
    response = api_post(
        api,
        "/tickets",
        {
            "kind": "problem",
            "subject": "x",
            "body": "see the command",
            "fields": {"launch_command": f"HF_TOKEN={HF} python train.py"},
        },
    )
    assert response.status_code == 201
    assert response.json()["fields"]["launch_command"] == "HF_TOKEN=[removed] python train.py"


@pytest.mark.parametrize("kind", ["extension", "payment"])
def test_extension_and_payment_tickets_need_an_order(api, kind):
    response = api_post(api, "/tickets", {"kind": kind, "subject": "s", "body": "b"})
    assert response.status_code == 422
    assert response.json() == {"detail": "order: Choose the order this is about."}
    assert Ticket.objects.count() == 0


def test_another_customers_order_cannot_be_attached(api):
    other = make_order()
    response = api_post(
        api,
        "/tickets",
        {"kind": "payment", "order": other.reference, "subject": "s", "body": "b"},
    )
    assert response.status_code == 422
    assert response.json() == {"detail": "order: No order with this reference on your account."}
    assert Ticket.objects.count() == 0


def test_another_customers_payment_cannot_be_attached(api, demo_mode):
    from kernodeck.payments import services as payment_services

    mine = make_order(owner=api.user)
    other = make_order()
    theirs = payment_services.payment_intent_create_for_order(
        order=other, method_code="btc-bitcoin", actor=other.owner
    )
    response = api_post(
        api,
        "/tickets",
        {
            "kind": "payment",
            "order": mine.reference,
            "subject": "s",
            "body": "b",
            "fields": {"payment": str(theirs.pk)},
        },
    )
    assert response.status_code == 422
    assert response.json() == {"detail": "payment: Choose one of this order's payments."}
    assert Ticket.objects.count() == 0


def test_payment_ticket_keeps_the_chosen_payment(api, demo_mode):
    from kernodeck.payments import services as payment_services

    order = make_order(owner=api.user)
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=api.user
    )
    response = api_post(
        api,
        "/tickets",
        {
            "kind": "payment",
            "order": order.reference.lower(),
            "subject": "Sent twice?",
            "body": "I declared it but nothing happens.",
            "fields": {"payment": str(intent.pk), "sent": "0.0021 BTC", "network": "Bitcoin"},
        },
    )
    assert response.status_code == 201
    ticket = Ticket.objects.get()
    assert ticket.intent == intent
    assert ticket.order == order
    assert response.json()["order"] == order.reference


def test_another_customers_ticket_is_a_404_on_api_and_web(api, client):
    ticket = problem_ticket(owner=make_user())
    assert api.get(f"/api/v1/tickets/{ticket.pk}").status_code == 404
    assert api_post(api, f"/tickets/{ticket.pk}/messages", {"body": "hi"}).status_code == 404
    assert api.get(f"/api/v1/tickets/{uuid.uuid4()}").status_code == 404
    assert api.get("/api/v1/tickets/not-a-uuid").status_code == 404
    assert api.get("/api/v1/tickets").json() == []
    client.force_login(make_user())
    assert client.get(reverse("support:detail", args=[ticket.pk])).status_code == 404
    assert Message.objects.filter(ticket=ticket).count() == 1


def test_thread_customer_and_staff_with_statuses_and_email(
    api, django_capture_on_commit_callbacks
):
    created = api_post(api, "/tickets", {"kind": "other", "subject": "Dates", "body": "When?"})
    ticket = Ticket.objects.get(pk=created.json()["id"])
    agent = make_agent()
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.ticket_message_add(
            ticket=ticket, author=agent, body="Tomorrow at 10:00 UTC.", from_staff=True
        )
    ticket.refresh_from_db()
    assert ticket.status == "answered"
    assert len(mail.outbox) == 1
    sent = mail.outbox[0]
    assert sent.to == [api.user.email]
    assert f"/support/{ticket.pk}/" in sent.body
    assert "Dates" in sent.body
    assert "10:00" not in sent.body  # the reply stays behind the sign-in
    stored = OutboxMessage.objects.get(event="ticket_reply")
    assert stored.account == api.user

    reply = api_post(api, f"/tickets/{ticket.pk}/messages", {"body": "Thanks, and the end?"})
    assert reply.status_code == 201
    data = reply.json()
    assert [m["author"] for m in data["messages"]] == ["customer", "support", "customer"]
    assert data["status"] == "open"
    assert len(mail.outbox) == 1  # customers' own messages send nothing
    assert OutboxMessage.objects.count() == 1


def test_staff_status_moves_follow_the_table():
    ticket = problem_ticket(owner=make_user())
    agent = make_agent()
    services.ticket_status_set(ticket=ticket, status="closed", actor=agent)
    with pytest.raises(Exception) as refused:
        services.ticket_status_set(ticket=ticket, status="answered", actor=agent)
    assert "cannot become" in str(refused.value)
    ticket.refresh_from_db()
    assert ticket.status == "closed"
    services.ticket_message_add(ticket=ticket, author=ticket.owner, body="Still broken")
    ticket.refresh_from_db()
    assert ticket.status == "open"


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (
            {"kind": "problem", "subject": "a\x00b", "body": "x"},
            "subject: contains a NUL byte",
        ),
        (
            {"kind": "problem", "subject": "s", "body": "x" * 20_001},
            "body: Keep this under 20,000",
        ),
        ({"kind": "nonsense", "subject": "s", "body": "x"}, "kind: Choose what the ticket"),
        ({"kind": "problem", "subject": "", "body": "x"}, "subject: This field is required."),
        (
            {"kind": "problem", "subject": "s", "body": "x", "fields": {"evil": 1}},
            "fields: Unknown",
        ),
        (
            {"kind": "problem", "subject": "s", "body": "x", "fields": {"when": "٣"}},
            "when: Choose",
        ),
        ({"kind": "problem", "subject": "s", "body": 5}, "Input should be a valid string"),
        ({"kind": "problem", "subject": "s", "body": "a\ud800b"}, "body: The text is not valid"),
        (
            {"kind": "problem", "subject": "s", "body": "x", "order": "KD-\x00"},
            "order: contains a NUL",
        ),
    ],
)
def test_bad_ticket_input_answers_422_and_writes_nothing(api, body, detail):
    response = api_post(api, "/tickets", body)
    assert response.status_code == 422
    assert response.json()["detail"].startswith(detail)
    assert Ticket.objects.count() == 0


def test_extension_days_in_other_scripts_are_refused(api):
    from tests.support.helpers import settled_order

    order = settled_order(owner=api.user)
    for days in ["٣", "³", "-1", "0", "91", "1e3", True]:
        response = api_post(
            api,
            "/tickets",
            {
                "kind": "extension",
                "order": order.reference,
                "subject": "s",
                "body": "b",
                "fields": {"extra_days": days, "deadline": "2099-01-01"},
            },
        )
        assert response.status_code == 422, days
        assert response.json()["detail"].startswith("extra_days:"), days
    assert Ticket.objects.count() == 0


def test_an_oversized_request_body_is_refused_without_a_500(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
    big = "x" * (2 * 1024 * 1024)
    response = api_post(api, "/tickets", {"kind": "other", "subject": "s", "body": big})
    assert response.status_code == 413
    assert response.json()["detail"].startswith("The request is too large")
    assert Ticket.objects.count() == 0


def test_unauthenticated_api_is_401(client):
    assert client.get("/api/v1/tickets").status_code == 401


# -- attachments -----------------------------------------------------------------------


PNG = png_bytes()


def test_text_attachment_is_cleaned_and_served_only_to_owner_and_staff(client):
    owner = make_user()
    log = f"step 1 ok\nHF_TOKEN={HF}\nOOM\n".encode()
    ticket = problem_ticket(
        owner=owner,
        attachments=[services.Upload(name="run.log", data=log), services.Upload("s.png", PNG)],
    )
    text, image = Attachment.objects.order_by("id")
    assert bytes(text.data) == b"step 1 ok\nHF_TOKEN=[removed]\nOOM\n"
    assert text.redactions == [
        {"kind": "huggingface_token", "label": "a Hugging Face token", "count": 1}
    ]
    assert image.content_type == "image/png"

    url = reverse("support:attachment", args=[ticket.pk, text.pk])
    staff_url = reverse("support_staff:attachment", args=[ticket.pk, text.pk])
    client.force_login(owner)
    response = client.get(url)
    assert response.status_code == 200
    assert response.content == b"step 1 ok\nHF_TOKEN=[removed]\nOOM\n"
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"].startswith("attachment")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert client.get(staff_url).status_code == 403

    client.force_login(make_user())
    assert client.get(url).status_code == 404
    client.force_login(make_user(staff=True))  # staff without the support permission
    assert client.get(staff_url).status_code == 403
    assert client.get(url).status_code == 404
    client.force_login(make_agent())
    assert client.get(staff_url).content == response.content
    other = problem_ticket(owner=make_user())
    assert (
        client.get(reverse("support_staff:attachment", args=[other.pk, text.pk])).status_code
        == 404
    )


@pytest.mark.parametrize(
    ("upload", "message"),
    [
        (services.Upload("big.log", b"a" * (512 * 1024 + 1)), "big.log is larger than 512 KiB"),
        (services.Upload("x.exe", b"MZ\x90\x00"), "x.exe: attach text files"),
        (services.Upload("x.log", b"ok\x00ok"), "x.log: attach text files"),
        (services.Upload("x.txt", b"\xff\xfe\xfa"), "x.txt: attach text files"),
        (services.Upload("fake.png", b"<html><script>"), "fake.png: attach text files"),
        (services.Upload("e.txt", b""), "e.txt is empty"),
    ],
)
def test_bad_attachments_are_refused_and_nothing_is_stored(upload, message):
    owner = make_user()
    with pytest.raises(InvalidInput) as refused:
        problem_ticket(owner=owner, attachments=[upload])
    assert refused.value.message.startswith(message)
    assert refused.value.field == "attachments"
    assert Ticket.objects.count() == 0
    assert Attachment.objects.count() == 0


def test_at_most_three_attachments():
    with pytest.raises(InvalidInput):
        problem_ticket(
            owner=make_user(),
            attachments=[services.Upload(f"{i}.txt", b"x") for i in range(4)],
        )
    assert Ticket.objects.count() == 0


# -- web -----------------------------------------------------------------------------------


def test_web_problem_form_files_a_ticket_with_an_attachment(client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    owner = make_user()
    order = make_order(owner=owner)
    client.force_login(owner)
    page = client.get(reverse("support:new") + f"?kind=problem&order={order.reference}")
    assert page.status_code == 200
    assert f'value="{order.reference}" selected' in page.content.decode()
    response = client.post(
        reverse("support:new"),
        {
            "kind": "problem",
            "order": order.reference,
            "when": "after_iterations",
            "subject": "OOM after 200 steps",
            "body": f"token {HF}",
            "first_error": "torch.cuda.OutOfMemoryError: CUDA out of memory.",
            "attachments": [SimpleUploadedFile("train.py", b"print('hi')\n")],
        },
    )
    ticket = Ticket.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("support:detail", args=[ticket.pk])
    assert ticket.order == order
    assert ticket.fields["when"] == "after_iterations"
    page = client.get(response["Location"]).content.decode()
    assert "Removed before storing" in page
    assert "a Hugging Face token" in page
    assert "train.py" in page
    assert HF not in page


def test_web_preview_shows_what_would_be_removed_and_stores_nothing(client):
    client.force_login(make_user())
    response = client.post(reverse("support:preview"), {"body": f"key {HF}", "subject": "x"})
    assert response.status_code == 200
    assert "a Hugging Face token" in response.content.decode()
    assert Ticket.objects.count() == 0
    clean = client.post(reverse("support:preview"), {"body": "pip freeze\ntorch==2.1.2"})
    assert "No secrets found" in clean.content.decode()


def test_web_form_errors_are_shown_not_raised(client):
    owner = make_user()
    client.force_login(owner)
    other = make_order()
    response = client.post(
        reverse("support:new"),
        {"kind": "payment", "order": other.reference, "subject": "s", "body": "b"},
    )
    assert response.status_code == 422
    assert Ticket.objects.count() == 0


def test_web_bad_input_is_a_form_error_never_a_500(client, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    owner = make_user()
    client.force_login(owner)
    nul = client.post(reverse("support:new"), {"kind": "other", "subject": "a\x00b", "body": "x"})
    assert nul.status_code == 400  # refused at the edge (core input layer)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
    huge = client.post(
        reverse("support:new"), {"kind": "other", "subject": "s", "body": "x" * 200_000}
    )
    assert huge.status_code == 413  # over the body limit: refused at the edge
    ticket = problem_ticket(owner=owner)
    detail = reverse("support:detail", args=[ticket.pk])
    exe = client.post(
        detail, {"body": "log", "attachments": [SimpleUploadedFile("a.exe", b"MZ\x90")]}
    )
    assert exe.status_code == 422
    assert "a.exe: attach text files" in exe.content.decode()
    assert Ticket.objects.count() == 1
    assert Message.objects.count() == 1
    assert Attachment.objects.count() == 0
