"""Parsing and checking of OpenSSH public keys (authorized_keys format)."""

import base64
import hashlib
from dataclasses import dataclass

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_ssh_public_key
from django.utils.translation import gettext as _

from kernodeck.core.errors import InvalidInput

RSA_MIN_BITS = 3072
MAX_KEY_LENGTH = 16_384


@dataclass(frozen=True)
class ParsedKey:
    key_type: str  # "ssh-ed25519", "ecdsa" or "ssh-rsa"
    algorithm: str  # the key's own type token, e.g. "ecdsa-sha2-nistp256"
    bits: int
    public_key: str  # "<algorithm> <base64>", comment removed
    fingerprint: str  # "SHA256:…" as `ssh-keygen -l` prints it
    comment: str


def parse_public_key(text: str) -> ParsedKey:
    """Parse one public key line; raise InvalidInput with the reason when it is unusable."""
    text = (text or "").strip()
    if not text:
        raise InvalidInput(_("Paste a public key."), field="public_key")
    if len(text) > MAX_KEY_LENGTH or "\n" in text:
        raise InvalidInput(_("Paste exactly one public key, on one line."), field="public_key")
    if "PRIVATE KEY" in text:
        raise InvalidInput(
            _(
                "This is a PRIVATE key. Never share it: paste the .pub file instead "
                "(e.g. ~/.ssh/id_ed25519.pub)."
            ),
            field="public_key",
        )
    parts = text.split(None, 2)
    if len(parts) < 2:
        raise InvalidInput(
            _("A public key looks like “ssh-ed25519 AAAA… comment”."), field="public_key"
        )
    algorithm, blob = parts[0], parts[1]
    comment = parts[2].strip() if len(parts) > 2 else ""
    try:
        key = load_ssh_public_key(f"{algorithm} {blob}".encode())
    except UnsupportedAlgorithm:
        raise InvalidInput(
            _("Key type %(type)s is not accepted: use Ed25519, ECDSA or RSA (3072 bits or more).")
            % {"type": algorithm[:40]},
            field="public_key",
        ) from None
    except (ValueError, TypeError):
        raise InvalidInput(
            _("This is not a valid OpenSSH public key (the data after the type is damaged)."),
            field="public_key",
        ) from None

    if isinstance(key, ed25519.Ed25519PublicKey):
        key_type, bits = "ssh-ed25519", 256
    elif isinstance(key, ec.EllipticCurvePublicKey):
        key_type, bits = "ecdsa", key.curve.key_size
    elif isinstance(key, rsa.RSAPublicKey):
        key_type, bits = "ssh-rsa", key.key_size
        if bits < RSA_MIN_BITS:
            raise InvalidInput(
                _("This RSA key has %(bits)d bits; at least %(min)d are required.")
                % {"bits": bits, "min": RSA_MIN_BITS},
                field="public_key",
            )
    else:
        raise InvalidInput(
            _("Key type %(type)s is not accepted: use Ed25519, ECDSA or RSA (3072 bits or more).")
            % {"type": algorithm[:40]},
            field="public_key",
        )

    raw = base64.b64decode(blob)
    fingerprint = "SHA256:" + base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")
    return ParsedKey(
        key_type=key_type,
        algorithm=algorithm,
        bits=bits,
        public_key=f"{algorithm} {blob}",
        fingerprint=fingerprint,
        comment=comment[:80],
    )
