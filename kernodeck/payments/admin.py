from django import forms
from django.conf import settings
from django.contrib import admin

from kernodeck.core.admin_mixins import ReadOnlyAdminMixin
from kernodeck.payments import registry, selectors, services
from kernodeck.payments.models import ChainState, PaymentIntent, PaymentMethod, Rate, Transfer
from kernodeck.payments.rates.base import ASSETS


@admin.register(PaymentMethod)
class PaymentMethodAdmin(admin.ModelAdmin):
    """Operators switch methods on and off; the wallets are shown read-only above."""

    list_display = [
        "code",
        "asset",
        "network",
        "enabled",
        "confirmations",
        "precision",
        "decimals",
    ]
    list_editable = ["enabled", "confirmations", "precision"]
    readonly_fields = ["code", "asset", "network", "chain", "decimals"]
    fields = [
        "code",
        "asset",
        "network",
        "chain",
        "decimals",
        "precision",
        "confirmations",
        "enabled",
    ]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        extra_context = extra_context or {}
        extra_context["wallets"] = sorted(
            registry.configured_wallets().values(), key=lambda wallet: wallet.chain
        )
        extra_context["chain_mode"] = settings.KERNODECK_CHAIN_MODE
        extra_context["availability"] = selectors.methods_overview()
        return super().changelist_view(request, extra_context=extra_context)


class ManualRateForm(forms.ModelForm):
    asset = forms.ChoiceField(choices=[(asset, asset) for asset in ASSETS])

    class Meta:
        model = Rate
        fields = ["asset", "usd_per_coin"]


@admin.register(Rate)
class RateAdmin(admin.ModelAdmin):
    """Fetched rates, and manual ones an operator enters (kept with who and when)."""

    list_display = ["asset", "usd_per_coin", "source", "fetched_at", "entered_by"]
    list_filter = ["asset", "source"]
    date_hierarchy = "fetched_at"
    list_select_related = ["entered_by"]
    form = ManualRateForm

    def has_add_permission(self, request):
        return request.user.has_perm("payments.set_rate")

    def has_change_permission(self, request, obj=None):
        return obj is None and request.user.has_perm("payments.set_rate")

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        rate = services.rate_record_manual(
            asset=form.cleaned_data["asset"],
            usd_per_coin=form.cleaned_data["usd_per_coin"],
            actor=request.user,
        )
        obj.pk = rate.pk


@admin.register(PaymentIntent)
class PaymentIntentAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "method",
        "order",
        "owner",
        "amount_base",
        "amount_usd",
        "status",
        "declared_at",
        "abandoned_at",
        "created_at",
        "expires_at",
    ]
    list_filter = ["status", "method", "purpose"]
    search_fields = ["id", "address", "order__reference", "owner__email", "solana_reference"]
    date_hierarchy = "created_at"
    list_select_related = ["method", "order", "owner"]


@admin.register(Transfer)
class TransferAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Every credit seen at our addresses. Read-only: decisions go through the review queue."""

    list_display = [
        "first_seen_at",
        "network",
        "txid",
        "index",
        "asset",
        "amount_base",
        "confirmations",
        "kind",
        "intent",
    ]
    list_filter = ["network", "kind", "asset"]
    search_fields = ["txid", "address", "intent__id"]
    date_hierarchy = "first_seen_at"
    list_select_related = ["intent"]


@admin.register(ChainState)
class ChainStateAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "network",
        "tip",
        "tip_changed_at",
        "last_success_at",
        "last_error_at",
        "last_error",
    ]
