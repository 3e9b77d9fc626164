"""Settings for the benchmark: the real settings plus one trivial JSON view (the baseline)."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
