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

    slug = models.SlugField(unique=True, help_text="Stable: used in URLs and the API.")
    gpu_model = models.CharField(max_length=80)
    vendor = models.CharField(max_length=16, choices=Vendor.choices)
    backend = models.CharField(max_length=8, choices=Backend.choices)
    memory_gib = models.PositiveIntegerField(help_text="Memory per card, as rented (GiB).")
    gpus_per_unit = models.PositiveSmallIntegerField(default=1)
    preparations = models.JSONField(
        default=list, help_text="Preparation codes offered: python, pytorch, notebook, inference."
    )
    description = models.CharField(max_length=240, blank=True)
    is_active = models.BooleanField(default=True)
    sort_order = models.PositiveSmallIntegerField(default=0)

    class Meta:
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

    offer = models.ForeignKey(Offer, on_delete=models.CASCADE, related_name="prices")
    days = models.PositiveSmallIntegerField(choices=[(d, f"{d} days") for d in DURATIONS])
    unit_price_usd = models.DecimalField(max_digits=10, decimal_places=2)

    class Meta:
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
