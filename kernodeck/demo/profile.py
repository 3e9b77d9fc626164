"""The environment of `kernodeck demo`: set before Django reads its settings."""

import base64
import os
import secrets
from pathlib import Path

DEMO_HOST = "127.0.0.1"
DEMO_PORT = 8000


def var_dir() -> Path:
    base = Path(__file__).resolve().parent.parent.parent
    return Path(os.environ.get("KERNODECK_VAR_DIR", base / "var"))


def apply_demo_environment() -> None:
    """Demo mode on plain http://127.0.0.1:8000, with a secret key kept under var/.

    Explicit KERNODECK_* variables still win, except KERNODECK_DEMO, which is the point.
    """
    folder = var_dir()
    folder.mkdir(parents=True, exist_ok=True)
    key_file = folder / "demo-secret-key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    field_key_file = folder / "demo-field-key"
    if not field_key_file.exists():
        field_key_file.write_text(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())
        field_key_file.chmod(0o600)
    os.environ["KERNODECK_DEMO"] = "1"
    os.environ.setdefault("KERNODECK_FIELD_KEYS", field_key_file.read_text().strip())
    os.environ.setdefault("KERNODECK_SECRET_KEY", key_file.read_text().strip())
    os.environ.setdefault("KERNODECK_HTTPS", "off")
    os.environ.setdefault("KERNODECK_ALLOWED_HOSTS", "127.0.0.1,localhost")
