"""Canned answers for the frequent cases; staff insert one and edit it before sending."""

from django.utils.translation import gettext_lazy as _

CANNED = {
    "double_payment": (
        _("Transfer already sent"),
        _(
            "Thank you for writing before sending anything else. Please do not send a second "
            "transfer: each payment has its own address and exact amount, and we are checking "
            "the one you declared for order {reference}. Tell us the amount and asset you sent "
            "and from which network; if it arrived, it will be matched or decided in review and "
            "shown in your order's tracking. Nothing sent to one of our addresses is lost."
        ),
    ),
    "missing_date": (
        _("Missing start or end date"),
        _(
            "The dates of order {reference} are shown in its tracking once access is delivered: "
            "the rental starts when the access information is provided, and ends after the "
            "duration you chose. We have checked the order; the dates are now confirmed in the "
            "tracking. Plan your exports for the end date shown there."
        ),
    ),
    "export_advice": (
        _("Export before the end"),
        _(
            "Please export your results, checkpoints, parameters and environment information "
            "before the end date shown in the tracking of order {reference}. Leave time to check "
            "the copy and to reload at least one checkpoint in a new process. A file that only "
            "exists on the rented machine is not a backup."
        ),
    ),
}


def canned_text(key: str, *, reference: str | None) -> str:
    """The canned answer `key`, with the ticket's order reference filled in."""
    _title, text = CANNED[key]
    return str(text).replace("{reference}", reference or "—")
