from django import forms
from django.contrib import admin, messages
from django.db import IntegrityError
from django.http import HttpResponseRedirect
from django.utils.translation import gettext as _

from kernodeck.catalog.models import Offer, OfferPrice, Preparation
from kernodeck.catalog.services import catalog_changed


class OfferPriceInline(admin.TabularInline):
    model = OfferPrice
    extra = 0
    min_num = 1


class OfferAdminForm(forms.ModelForm):
    preparations = forms.MultipleChoiceField(
        choices=Preparation.choices, widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = Offer
        fields = [
            "slug",
            "gpu_model",
            "vendor",
            "backend",
            "memory_gib",
            "gpus_per_unit",
            "preparations",
            "description",
            "is_active",
            "sort_order",
        ]


@admin.register(Offer)
class OfferAdmin(admin.ModelAdmin):
    form = OfferAdminForm
    inlines = [OfferPriceInline]
    list_display = [
        "gpu_model",
        "slug",
        "backend",
        "memory_gib",
        "gpus_per_unit",
        "is_active",
        "sort_order",
    ]
    list_filter = ["backend", "is_active"]
    list_editable = ["is_active", "sort_order"]
    search_fields = ["gpu_model", "slug"]

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        # The form checks the unique slug and one price per duration, but two operators
        # saving at the same moment both pass it: the one the database refuses is told
        # why (the whole save was rolled back with the admin's transaction), not a 500.
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except IntegrityError:
            self.message_user(
                request,
                _(
                    "Another change to the offers was saved at the same moment (the same "
                    "slug, or a second price for one duration), so nothing was saved. "
                    "Check the offer and save again."
                ),
                messages.ERROR,
            )
            return HttpResponseRedirect(request.get_full_path())

    def get_readonly_fields(self, request, obj=None):
        # Slugs are stable once an offer exists: URLs and API clients rely on them.
        return ["slug"] if obj else []

    # Operators edit offers and prices here, not through a service: each save (the change
    # form with its prices, or the list's editable columns) marks the cached catalog stale.
    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        catalog_changed()

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        catalog_changed()

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        catalog_changed()

    def delete_queryset(self, request, queryset):
        super().delete_queryset(request, queryset)
        catalog_changed()
