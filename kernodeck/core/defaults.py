"""Defaults that the settings and the deploy checks share (no Django import here).

The development keys are fixed, public values for `KERNODECK_DEBUG` on: the deploy checks
(`checks.py`) refuse both, so a production set-up can never run on them.
"""

import os
from pathlib import Path

# The package's parent folder: the checkout for a source checkout (or an editable install),
# site-packages for an installed wheel.
PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent

DEVELOPMENT_SECRET_KEY = "insecure-development-key-only-for-KERNODECK_DEBUG-on"  # noqa: S105
DEVELOPMENT_FIELD_KEY = "ZGV2ZWxvcG1lbnQtb25seS1maWVsZC1rZXktMDAwMDA="


def default_var_dir(root: Path = PROJECT_ROOT) -> Path:
    """Where state lives when `KERNODECK_VAR_DIR` is unset.

    A source checkout (its `pyproject.toml` beside the package) keeps it in the checkout's
    own `var/`, wherever the command runs from; an installed package, which has no checkout,
    uses `var/` of the current working directory (production sets KERNODECK_VAR_DIR).
    """
    if (root / "pyproject.toml").is_file():
        return root / "var"
    return Path.cwd().resolve() / "var"


def var_dir() -> Path:
    """`KERNODECK_VAR_DIR` if set, else the default above (an absolute path)."""
    configured = os.environ.get("KERNODECK_VAR_DIR", "").strip()
    return Path(configured).resolve() if configured else default_var_dir()
