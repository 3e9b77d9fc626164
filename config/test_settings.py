"""Settings for the test suite: the real settings module, with development defaults.

Values the caller already exported win, so CI can point the suite at PostgreSQL with
KERNODECK_DATABASE_URL.
"""

import os

os.environ.setdefault("KERNODECK_DEBUG", "1")
os.environ.setdefault("KERNODECK_TASKS_IMMEDIATE", "1")
os.environ.setdefault("KERNODECK_EMAIL_URL", "locmem:")
# No test ever reaches a real chain or price API: watchers start switched off, and tests
# that need one point it at a loopback server.
for _name in (
    "KERNODECK_BITCOIN_ESPLORA_URL",
    "KERNODECK_LITECOIN_ESPLORA_URL",
    "KERNODECK_ETHEREUM_RPC_URL",
    "KERNODECK_TRON_API_URL",
    "KERNODECK_SOLANA_RPC_URL",
):
    os.environ.setdefault(_name, "")
# Loopback Esplora servers answer only the routes their test needs; the genesis check's
# own tests turn it on.
os.environ.setdefault("KERNODECK_ESPLORA_GENESIS_CHECK", "0")
os.environ.setdefault("KERNODECK_KRAKEN_URL", "http://127.0.0.1:9/")
os.environ.setdefault("KERNODECK_COINGECKO_URL", "http://127.0.0.1:9/")


def _redis_of_this_worker(url: str, worker: str) -> str:
    """Each pytest-xdist worker gets its own Redis database (the tests empty the cache, and
    Redis empties a whole database): the given one for gw0, the ones below it for the
    others (15, 14, 13, 12 from /15)."""
    if not url or not worker.startswith("gw") or not worker[2:].isdigit():
        return url
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    base = parts.path.strip("/")
    database = (int(base) if base.isdigit() else 0) - int(worker[2:])
    return urlunsplit(parts._replace(path=f"/{database % 16}"))


os.environ["KERNODECK_REDIS_URL"] = _redis_of_this_worker(
    os.environ.get("KERNODECK_REDIS_URL", ""), os.environ.get("PYTEST_XDIST_WORKER", "")
)

from config.settings import *  # noqa: E402, F403

# Argon2 at its production cost makes every sign-in in the suite slow; the hasher and the
# variant (argon2id) stay the same.
PASSWORD_HASHERS = [
    "tests.hashers.FastArgon2PasswordHasher",
    *PASSWORD_HASHERS,  # noqa: F405
]
