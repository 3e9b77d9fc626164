import base64
import hashlib
import shutil
import subprocess

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa
from django.urls import reverse

from kernodeck.accounts.models import SshKey
from kernodeck.accounts.ssh_keys import parse_public_key
from kernodeck.core.errors import InvalidInput
from tests.factories import make_user


def openssh_public(private_key, comment="me@laptop") -> str:
    line = (
        private_key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )
    return f"{line} {comment}"


@pytest.mark.parametrize(
    ("private_key", "key_type", "bits"),
    [
        (ed25519.Ed25519PrivateKey.generate(), "ssh-ed25519", 256),
        (ec.generate_private_key(ec.SECP256R1()), "ecdsa", 256),
        (ec.generate_private_key(ec.SECP384R1()), "ecdsa", 384),
        (rsa.generate_private_key(public_exponent=65537, key_size=3072), "ssh-rsa", 3072),
    ],
)
def test_accepted_key_types(private_key, key_type, bits):
    parsed = parse_public_key(openssh_public(private_key))

    assert (parsed.key_type, parsed.bits, parsed.comment) == (key_type, bits, "me@laptop")
    blob = parsed.public_key.split()[1]
    expected = base64.b64encode(hashlib.sha256(base64.b64decode(blob)).digest()).decode()
    assert parsed.fingerprint == "SHA256:" + expected.rstrip("=")


@pytest.mark.skipif(
    not shutil.which("ssh-keygen"), reason="ssh-keygen (openssh-client) not installed"
)
def test_fingerprint_matches_ssh_keygen(tmp_path):
    line = openssh_public(ed25519.Ed25519PrivateKey.generate())
    path = tmp_path / "key.pub"
    path.write_text(line + "\n")

    out = subprocess.run(
        ["ssh-keygen", "-lf", str(path)], capture_output=True, text=True, check=True
    )

    assert parse_public_key(line).fingerprint == out.stdout.split()[1]


def test_short_rsa_key_is_refused_with_its_size():
    line = openssh_public(rsa.generate_private_key(public_exponent=65537, key_size=2048))

    with pytest.raises(InvalidInput, match="This RSA key has 2048 bits; at least 3072"):
        parse_public_key(line)


def test_dsa_key_is_refused():
    weak = dsa.generate_private_key(key_size=1024)  # noqa: S505 - it must be refused
    line = openssh_public(weak)

    with pytest.raises(InvalidInput, match="Key type ssh-dss is not accepted"):
        parse_public_key(line)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "Paste a public key."),
        ("ssh-ed25519", "A public key looks like"),
        ("ssh-ed25519 AAAAnotbase64!!", "not a valid OpenSSH public key"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "This is a PRIVATE key"),
        ("ssh-ed25519 AAAA\nssh-ed25519 BBBB", "exactly one public key"),
    ],
)
def test_bad_input_is_refused_with_the_reason(text, reason):
    with pytest.raises(InvalidInput, match=reason):
        parse_public_key(text)


@pytest.mark.django_db
def test_key_added_on_the_account_page_shows_its_fingerprint(client):
    user = make_user()
    client.force_login(user)
    line = openssh_public(ed25519.Ed25519PrivateKey.generate(), comment="workstation")

    client.post(reverse("accounts:ssh_key_add"), {"public_key": line, "name": ""})
    page = client.get(reverse("accounts:account")).content.decode()

    key = SshKey.objects.get(user=user)
    assert key.name == "workstation"
    assert key.fingerprint in page


@pytest.mark.django_db
def test_same_key_twice_is_refused(client):
    user = make_user()
    client.force_login(user)
    line = openssh_public(ed25519.Ed25519PrivateKey.generate())
    client.post(reverse("accounts:ssh_key_add"), {"public_key": line})

    response = client.post(reverse("accounts:ssh_key_add"), {"public_key": line})

    assert "This key is already on your account." in response.content.decode()
    assert SshKey.objects.filter(user=user).count() == 1


@pytest.mark.django_db
def test_bad_key_on_the_page_is_refused_next_to_the_field(client):
    client.force_login(make_user())

    response = client.post(reverse("accounts:ssh_key_add"), {"public_key": "ssh-rsa nonsense"})

    assert "not a valid OpenSSH public key" in response.content.decode()
    assert not SshKey.objects.exists()


@pytest.mark.django_db
def test_key_removal_asks_for_confirmation_and_is_private(client):
    owner = make_user()
    client.force_login(owner)
    line = openssh_public(ed25519.Ed25519PrivateKey.generate())
    client.post(reverse("accounts:ssh_key_add"), {"public_key": line})
    key = SshKey.objects.get()

    client.force_login(make_user())
    assert client.post(reverse("accounts:ssh_key_remove", args=[key.pk])).status_code == 404
    client.force_login(owner)
    assert (
        "Remove this SSH key?"
        in client.get(reverse("accounts:ssh_key_remove", args=[key.pk])).content.decode()
    )
    client.post(reverse("accounts:ssh_key_remove", args=[key.pk]))

    assert not SshKey.objects.exists()
