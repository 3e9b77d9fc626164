"""The demo panel of a payment page: rendered in demo mode only, nothing otherwise."""

from django import template
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from kernodeck.demo import payments
from kernodeck.payments import uris

register = template.Library()


@register.inclusion_tag("demo/payment_panel_body.html")
def demo_payment_panel(intent):
    """The panel's buttons for `intent`, with the amounts each send action pays."""
    if not payments.demo_is_on() or intent is None:
        return {"show": False}
    method = intent.method

    def sent(action):
        amount = payments.amount_to_send(intent=intent, action=action)
        return f"{uris.amount_text(amount, method.decimals)} {method.asset}"

    confirmations = method.confirmations
    blocks = payments.blocks_to_confirm(intent)
    return {
        "show": True,
        "intent": intent,
        "send_actions": [
            ("exact", _("Send the exact amount"), sent("exact")),
            ("less", _("Send less"), sent("less")),
            ("more", _("Send more"), sent("more")),
            ("late", _("Send the exact amount after the expiry"), sent("late")),
        ],
        "chain_actions": [
            ("mine_one", _("Mine a block"), ""),
            (
                "mine_enough",
                ngettext("Mine %(n)s block", "Mine %(n)s blocks", blocks) % {"n": blocks},
                ngettext(
                    "%(n)s confirmation is required",
                    "%(n)s confirmations are required",
                    confirmations,
                )
                % {"n": confirmations},
            ),
            ("expire", _("End the payment window now"), ""),
        ],
    }
