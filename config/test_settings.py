"""Settings for the test suite: the real settings module, with development defaults.

Values the caller already exported win, so CI can point the suite at PostgreSQL with
KERNODECK_DATABASE_URL.
"""

import os

os.environ.setdefault("KERNODECK_DEBUG", "1")
os.environ.setdefault("KERNODECK_TASKS_IMMEDIATE", "1")
os.environ.setdefault("KERNODECK_EMAIL_URL", "locmem:")

from config.settings import *  # noqa: F403

# Argon2 at its production cost makes every sign-in in the suite slow; the hasher and the
# variant (argon2id) stay the same.
PASSWORD_HASHERS = [
    "tests.hashers.FastArgon2PasswordHasher",
    *PASSWORD_HASHERS,  # noqa: F405
]
