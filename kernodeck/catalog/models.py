from django.db import models
from django.utils.translation import gettext_lazy as _


class Backend(models.TextChoices):
    CUDA = "cuda", "CUDA"
    ROCM = "rocm", "ROCm"


class Vendor(models.TextChoices):
    NVIDIA = "nvidia", "NVIDIA"
    AMD = "amd", "AMD"


class Preparation(models.TextChoices):
    PYTHON = "python", _("Python")
    PYTORCH = "pytorch", _("PyTorch")
    NOTEBOOK = "notebook", _("Notebook")
    INFERENCE = "inference", _("Inference")


DURATIONS = (3, 7, 30)
MIN_UNITS, MAX_UNITS = 1, 10


class Offer(models.Model):
    """A GPU model the fleet rents out, in units of `gpus_per_unit` GPUs."""

    slug = models.SlugField(
        unique=True, help_text=_("Stable: used in URLs and the API."), verbose_name=_("slug")
    )
    gpu_model = models.CharField(max_length=80, verbose_name=_("GPU model"))
    vendor = models.CharField(max_length=16, choices=Vendor.choices, verbose_name=_("vendor"))
    backend = models.CharField(max_length=8, choices=Backend.choices, verbose_name=_("backend"))
    memory_gib = models.PositiveIntegerField(
        help_text=_("Memory per card, as rented (GiB)."), verbose_name=_("memory (GiB)")
    )
    gpus_per_unit = models.PositiveSmallIntegerField(default=1, verbose_name=_("GPUs per unit"))
    preparations = models.JSONField(
        default=list,
        help_text=_("Preparation codes offered: python, pytorch, notebook, inference."),
        verbose_name=_("preparations"),
    )
    description = models.CharField(max_length=240, blank=True, verbose_name=_("description"))
    is_active = models.BooleanField(default=True, verbose_name=_("active"))
    sort_order = models.PositiveSmallIntegerField(default=0, verbose_name=_("sort order"))

    class Meta:
        verbose_name = _("offer")
        verbose_name_plural = _("offers")
        ordering = ["sort_order", "slug"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(gpus_per_unit__gte=1, gpus_per_unit__lte=8),
                name="catalog_offer_gpus_per_unit_range",
            ),
            models.CheckConstraint(
                condition=models.Q(memory_gib__gte=1), name="catalog_offer_memory_positive"
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(vendor="nvidia", backend="cuda")
                    | models.Q(vendor="amd", backend="rocm")
                ),
                name="catalog_offer_vendor_backend",
            ),
        ]

    def __str__(self):
        return self.gpu_model


class OfferPrice(models.Model):
    """Price of one unit of an offer for one duration (longer terms may be cheaper)."""

    offer = models.ForeignKey(
        Offer, on_delete=models.CASCADE, related_name="prices", verbose_name=_("offer")
    )
    days = models.PositiveSmallIntegerField(
        choices=[(d, f"{d} days") for d in DURATIONS], verbose_name=_("days")
    )
    unit_price_usd = models.DecimalField(
        max_digits=10, decimal_places=2, verbose_name=_("unit price (USD)")
    )

    class Meta:
        verbose_name = _("price")
        verbose_name_plural = _("prices")
        ordering = ["offer", "days"]
        constraints = [
            models.UniqueConstraint(fields=["offer", "days"], name="catalog_price_offer_days"),
            models.CheckConstraint(
                condition=models.Q(days__in=DURATIONS), name="catalog_price_days_allowed"
            ),
            models.CheckConstraint(
                condition=models.Q(unit_price_usd__gt=0), name="catalog_price_positive"
            ),
        ]

    def __str__(self):
        return f"{self.offer} · {self.days} days · {self.unit_price_usd} USD"
