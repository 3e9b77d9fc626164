"""The environment of `kernodeck demo`: set before Django reads its settings."""

import base64
import os
import secrets
from pathlib import Path

from kernodeck.core import defaults

DEMO_HOST = "127.0.0.1"
DEMO_PORT = 8000
SIMULATOR_STATE = "chain-simulator.json"  # under var/: the simulated chains
SIMULATOR_PORT_FILE = "chain-simulator.port"  # under var/: written by the running simulator


def var_dir() -> Path:
    return defaults.var_dir()  # the same folder as the settings' VAR_DIR


def simulator_environment(base_url: str) -> dict[str, str]:
    """The KERNODECK_* variables that point every watcher (and the demo panel) at the
    chain simulator listening at `base_url`."""
    return {
        "KERNODECK_BITCOIN_ESPLORA_URL": f"{base_url}/bitcoin/api",
        "KERNODECK_LITECOIN_ESPLORA_URL": f"{base_url}/litecoin/api",
        "KERNODECK_ETHEREUM_RPC_URL": f"{base_url}/ethereum",
        "KERNODECK_TRON_API_URL": f"{base_url}/tron",
        "KERNODECK_SOLANA_RPC_URL": f"{base_url}/solana",
        "KERNODECK_DEMO_SIMULATOR_URL": base_url,
    }


def running_simulator_url() -> str | None:
    """The URL of the demo's running chain simulator, from the port file it writes."""
    try:
        port = (var_dir() / SIMULATOR_PORT_FILE).read_text().strip()
    except OSError:
        return None
    return f"http://{DEMO_HOST}:{port}" if port.isdigit() else None


def apply_demo_environment(*, chain_simulator: bool = True) -> None:
    """Demo mode on plain http://127.0.0.1:8000, with a secret key kept under var/.

    With `chain_simulator`, a command run beside a running demo (`KERNODECK_DEMO=1
    kernodeck watch_chains --once`) also watches the demo's simulated chains.
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
    simulator = running_simulator_url() if chain_simulator else None
    if simulator:
        for name, value in simulator_environment(simulator).items():
            os.environ.setdefault(name, value)
