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
os.environ.setdefault("KERNODECK_KRAKEN_URL", "http://127.0.0.1:9/")
os.environ.setdefault("KERNODECK_COINGECKO_URL", "http://127.0.0.1:9/")

from config.settings import *  # noqa: E402, F403

# Argon2 at its production cost makes every sign-in in the suite slow; the hasher and the
# variant (argon2id) stay the same.
PASSWORD_HASHERS = [
    "tests.hashers.FastArgon2PasswordHasher",
    *PASSWORD_HASHERS,  # noqa: F405
]
