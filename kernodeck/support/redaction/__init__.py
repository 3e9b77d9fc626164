"""Secret removal: what is taken out of support messages and attachments before storage.

Customers paste logs, commands and configuration into problem reports. Anything that
grants access (a private key, a wallet's seed phrase, an API token, a password) is
replaced by `[removed]` before the text is stored or shown to staff, and the customer
is told what was removed and why. The rules are deliberately shaped so that ordinary
technical output (tracebacks, `pip freeze`, CUDA errors, `nvidia-smi`, build
configurations) passes unchanged: each rule matches a recognisable secret shape, not
"anything long and random".

The rules live in four modules: `findings` (what the customer is told), `text` (the secret
shapes and `redact`), `seed_phrases` (BIP39 recovery phrases, found by word lists and
checksum) and `images` (what is cut from a screenshot before it is stored). The names callers
use are imported here.
"""

from kernodeck.support.redaction.findings import KIND_LABELS, REMOVED, Finding, Redacted
from kernodeck.support.redaction.images import NotAnImage, image_split
from kernodeck.support.redaction.seed_phrases import (
    SEED_LENGTHS,
    Wordlist,
    bip39_checksum_valid,
    bip39_lists,
)
from kernodeck.support.redaction.text import normalise, redact

__all__ = [
    "KIND_LABELS",
    "REMOVED",
    "SEED_LENGTHS",
    "Finding",
    "NotAnImage",
    "Redacted",
    "Wordlist",
    "bip39_checksum_valid",
    "bip39_lists",
    "image_split",
    "normalise",
    "redact",
]
