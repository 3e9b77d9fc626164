from django.contrib.auth.hashers import Argon2PasswordHasher


class FastArgon2PasswordHasher(Argon2PasswordHasher):
    """Argon2id with a small memory cost, so the suite's many sign-ins stay quick."""

    time_cost = 1
    memory_cost = 1024
    parallelism = 1
