"""Payment set-up: the methods a customer can pay with, exchange rates, address counters.

Apart from the intents and transfers because these rows configure quoting (which asset on
which network, at what rate, at which derivation index) and change on an operator's or the
rate fetcher's schedule, not with each payment.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _


class PaymentMethod(models.Model):
    """One asset + network pair. Rows come from `methods.METHODS`; operators toggle them."""

    code = models.SlugField(primary_key=True, verbose_name=_("code"))
    asset = models.CharField(max_length=8, verbose_name=_("asset"))
    network = models.CharField(max_length=40, verbose_name=_("network"))
    chain = models.CharField(max_length=16, verbose_name=_("chain"))
    decimals = models.PositiveSmallIntegerField(
        help_text=_("Base-unit decimals of the asset."), verbose_name=_("decimals")
    )
    precision = models.PositiveSmallIntegerField(
        help_text=_("Decimals the amount is quoted to."), verbose_name=_("precision")
    )
    confirmations = models.PositiveSmallIntegerField(verbose_name=_("confirmations"))
    enabled = models.BooleanField(default=True, verbose_name=_("enabled"))
    sort_order = models.PositiveSmallIntegerField(default=0, verbose_name=_("sort order"))

    class Meta:
        verbose_name = _("payment method")
        verbose_name_plural = _("payment methods")
        ordering = ["sort_order", "code"]
        constraints = [
            models.CheckConstraint(
                condition=Q(confirmations__gte=1), name="payments_method_confirmations_min_1"
            ),
            models.CheckConstraint(
                condition=Q(precision__lte=models.F("decimals")),
                name="payments_method_precision_within_decimals",
            ),
        ]

    def __str__(self):
        return gettext("%(asset)s on %(network)s") % {"asset": self.asset, "network": self.network}

    def clean(self):
        """The constraints' refusals as form errors: the back-office edits confirmations and
        precision with the decimals read-only (so left out of the form's own checks)."""
        errors = {}
        if self.confirmations is not None and self.confirmations < 1:
            errors["confirmations"] = _("A payment method needs at least one confirmation.")
        if None not in (self.precision, self.decimals) and self.precision > self.decimals:
            errors["precision"] = _(
                "The precision cannot exceed the asset's %(decimals)s decimals."
            ) % {"decimals": self.decimals}
        if errors:
            raise ValidationError(errors)


class Rate(models.Model):
    """An exchange rate: USD per coin, where it came from and when."""

    asset = models.CharField(max_length=8, db_index=True, verbose_name=_("asset"))
    usd_per_coin = models.DecimalField(
        max_digits=24, decimal_places=10, verbose_name=_("USD per coin")
    )
    source = models.CharField(max_length=20, verbose_name=_("source"))
    fetched_at = models.DateTimeField(verbose_name=_("fetched at"))
    entered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text=_("The operator, for a manual rate."),
        verbose_name=_("entered by"),
    )

    class Meta:
        verbose_name = _("exchange rate")
        verbose_name_plural = _("exchange rates")
        permissions = [("set_rate", "Can enter a manual exchange rate")]
        ordering = ["-fetched_at", "-id"]
        indexes = [models.Index(fields=["asset", "-fetched_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(usd_per_coin__gt=0), name="payments_rate_positive"),
        ]

    def __str__(self):
        when = f"{self.fetched_at:%Y-%m-%d %H:%M}"
        return f"{self.asset} {self.usd_per_coin} USD ({self.source}, {when})"


class AddressCounter(models.Model):
    """The next unused derivation index of one chain's watch-only key."""

    chain = models.CharField(max_length=16)
    wallet_fingerprint = models.CharField(max_length=16)
    next_index = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["chain", "wallet_fingerprint"], name="payments_counter_chain_wallet"
            ),
        ]

    def __str__(self):
        return f"{self.chain} {self.wallet_fingerprint}: next {self.next_index}"
