"""Other key formats, invisible characters, file names and what hides in an image."""

import hashlib

import pytest

from kernodeck.support import services
from kernodeck.support.models import Attachment
from kernodeck.support.redaction import REMOVED, redact
from tests.factories import make_user
from tests.support.helpers import HF, jpeg_bytes, png_bytes, problem_ticket

pytestmark = pytest.mark.django_db

_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _base58check(payload: bytes) -> str:
    raw = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    number = int.from_bytes(raw, "big")
    out = ""
    while number:
        number, digit = divmod(number, 58)
        out = _B58[digit] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


WIF_COMPRESSED = _base58check(b"\x80" + bytes(range(1, 33)) + b"\x01")
WIF_UNCOMPRESSED = _base58check(b"\x80" + bytes(range(1, 33)))
WIF_TESTNET = _base58check(b"\xef" + bytes(range(5, 37)) + b"\x01")
HF34 = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567"
PPK = (
    "PuTTY-User-Key-File-3: ssh-ed25519\n"
    "Encryption: none\n"
    "Comment: ed25519-key-20260101\n"
    "Public-Lines: 2\n"
    "AAAAC3NzaC1lZDI1NTE5AAAAIOdummydummydummydummydummydummydummydum\n"
    "my\n"
    "Private-Lines: 1\n"
    "AAAAIFakePrivateKeyBytesFakePrivateKeyBytesFake\n"
    "Private-MAC: 0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
)
SOLANA = "[" + ",".join(str((i * 37) % 256) for i in range(64)) + "]"
SOLANA_PRETTY = "[\n  " + ",\n  ".join(str((i * 91) % 256) for i in range(64)) + "\n]"

POSITIVES = [
    ("private_key", f"my putty key:\n{PPK}\nthanks", "AAAAIFakePrivateKeyBytes"),
    ("keypair_array", f"cat ~/.config/solana/id.json\n{SOLANA}", SOLANA[1:40]),
    ("keypair_array", f"id.json = {SOLANA_PRETTY}", SOLANA_PRETTY[4:30]),
    ("wif_key", f"importprivkey {WIF_COMPRESSED}", WIF_COMPRESSED),
    ("wif_key", f"clave: {WIF_UNCOMPRESSED}", WIF_UNCOMPRESSED),
    ("wif_key", f"testnet {WIF_TESTNET}", WIF_TESTNET),
    ("command_password", "mysql -h db.local -u root -pS3cretPw app", "S3cretPw"),
    ("command_password", "mysqldump --password Hunter2024 --all-databases", "Hunter2024"),
    ("assignment", "mysql --password=Hunter2024 -h db", "Hunter2024"),
    (
        "authorization_header",
        "curl -H 'Authorization: Bearer 4f9c1e7a2b8d4c0e9f1a' https://api.example/v1",
        "4f9c1e7a2b8d4c0e9f1a",
    ),
    (
        "authorization_header",
        'requests.get(u, headers={"Authorization": "Token abcDEF123456ghi"})',
        "abcDEF123456ghi",
    ),
    ("assignment", "body: user=ana&password%3Dhunter2%21xyz&remember=1", "hunter2%21xyz"),
    ("assignment", "GET /cb?q=1&api_key%3DABCDEF1234567890 HTTP/1.1", "ABCDEF1234567890"),
    ("huggingface_token", f"token: {HF34[:21]}\n{HF34[21:]}\nend", HF34[10:21]),
    ("huggingface_token", f"{HF34[:12]}\n  {HF34[12:]}", HF34[12:]),
    ("huggingface_token", f"HF {HF34[:9]}\u200b{HF34[9:]}", HF34[9:]),
    ("huggingface_token", f"HF {HF34[:9]}\u00ad{HF34[9:]}", HF34[9:]),
    ("github_token", "ghp_" + "\u2060".join("1234567890abcdefghijABCDEFGHIJ123456"), "J12345"),
    (
        "private_key",
        "-----BEGIN\u200b OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXk",
    ),
    ("assignment", "contraseña: Hunter2024", "Hunter2024"),
    # Invisible characters that have a use elsewhere, inside a token; tokens wrapped.
    ("huggingface_token", f"HF {HF34[:9]}\ufe0f{HF34[9:]}", HF34[9:]),
    ("huggingface_token", f"HF {HF34[:9]}\U000e0020{HF34[9:]}", HF34[9:]),
    ("huggingface_token", f"HF {HF34[:9]}\u034f{HF34[9:]}", HF34[9:]),
    ("huggingface_token", f"HF {HF34[:9]}\u3164{HF34[9:]}", HF34[9:]),
    ("huggingface_token", f"--token {HF34[:20]}\\\n  {HF34[20:]}", HF34[20:]),
    ("openai_key", "sk-proj-A1b2C3d4E5f6G7h8I9j0\nK1l2M3n4O5p6Q7r8", "K1l2M3n4O5p6Q7r8"),
    ("github_token", "ghp_1234567890abcdefghijABCDEFGHIJ\r\n123456aBc", "123456aBc"),
    # Passwords on command lines and in headers, whatever they look like.
    ("command_password", "mysql -u root --password hunter app", " hunter "),
    ("command_password", "mysql -u root --password 'caballo correcto' app", "caballo correcto"),
    ("command_password", "docker login -u ana -p S3cretPw registry.example", "S3cretPw"),
    ("command_password", "curl -u ana:S3cretPass https://api.example/v1", "S3cretPass"),
    ("command_password", "curl -s --user 'ana:hunter2x' https://api.example/v1", "hunter2x"),
    ("assignment", "curl -H 'X-API-Key: 0123abcd4567efgh' https://api.example", "0123abcd4567"),
    ("assignment", 'curl -H "api-key: 0123abcd4567efgh" https://api.example', "0123abcd4567"),
    ("assignment", "data=%7B%22password%22%3A%22hunter2xyz%22%7D", "hunter2xyz"),
    ("assignment", "next=%2Flogin%3Fpassword%253Dhunter2xyz%2526x%253D1", "hunter2xyz"),
    # Key blocks as chats and editors leave them, or pasted in part.
    (
        "private_key",
        "-----BEGIN\u00a0OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXk",
    ),
    (
        "private_key",
        "\u2014\u2013BEGIN RSA PRIVATE KEY\u2014\u2013\nMIIEowIBAAKCAQEA7dummy\n"
        "\u2014\u2013END RSA PRIVATE KEY\u2014\u2013",
        "MIIEowIBAAKCAQEA7dummy",
    ),
    (
        "private_key",
        "----BEGIN EC PRIVATE KEY----\nMHcCAQEEIDummyDummy\n----END EC PRIVATE KEY----",
        "MHcCAQEEIDummyDummy",
    ),
    (
        "private_key",
        "-----begin private key-----\nMIIEvQIBADANBgkqhkiG9w0\n-----end private key-----",
        "MIIEvQIBADANBgkqhkiG9w0",
    ),
    ("private_key", PPK[PPK.index("Private-Lines") :], "AAAAIFakePrivateKeyBytes"),
    ("private_key", PPK.replace("\n", "\r\n"), "AAAAIFakePrivateKeyBytes"),
    (
        "private_key",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        "QyNTUxOQAAACDp0lhh0dummydummy",
        "QyNTUxOQAAACDp0lhh0dummydummy",
    ),
]

# Prose around every sample, in both languages: it stays as it was.
PROSE = {
    "es": ("Hola, os paso la salida:\n", "\nGracias de antemano."),
    "en": ("Hi, here is the output:\n", "\nThanks in advance."),
}


@pytest.mark.parametrize("prose", sorted(PROSE))
@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVES)
def test_each_other_format_is_removed(kind, text, secret, prose):
    before, after = PROSE[prose]
    result = redact(before + text + after)
    assert secret not in result.text
    assert REMOVED in result.text
    assert kind in {f.kind for f in result.findings}
    assert result.text.startswith(before) and result.text.endswith(after)


def test_the_line_after_a_complete_token_stays():
    result = redact(f"{HF34}\nnext line")
    assert result.text == f"{REMOVED}\nnext line"


@pytest.mark.parametrize("line", ["12345678", "Gracias", "ThanksAgain", "línea siguiente"])
def test_a_word_or_a_number_after_a_token_is_not_its_wrapped_rest(line):
    token = "sk-proj-A1b2C3d4E5f6G7h8I9j0"
    assert redact(f"{token}\n{line}\n").text == f"{REMOVED}\n{line}\n"


NEGATIVES = {
    "base58 without a checksum": "txid 5HpjKrb7dH5kKQQzmbjB87Mxova7mek5bXUTWfndcX6tBoqUwzz",
    "a short array": "shape = [1, 3, 224, 224]",
    "64 floats are not a key": "[" + ", ".join("0.5" for _ in range(64)) + "]",
    "numbers over 255": "[" + ",".join(str(256 + i) for i in range(64)) + "]",
    "mysql asking for the password": "mysql -h db -u root -p app",
    "mysql port": "mysql -h db -P3306 -u root -p",
    "a password flag described": "use the --password flag, then type it",
    "authorization scheme only": "Authorization: Bearer $TOKEN",
    "zero-width joiner in an emoji": "gracias 👩\u200d💻",
    "a public key block": "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n"
    "-----END PUBLIC KEY-----",
    "a putty public part": "Public-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAIOdummydummydummydummy\nmy",
    "a key described": "the -- BEGIN line of a private key -- is missing",
    "keycap and symbol emoji": "paso 1\ufe0f\u20e3 hecho ☺\ufe0f y #\ufe0f\u20e3",
    "a flag made of tag characters": "🏴"
    + "".join(chr(0xE0000 + ord(c)) for c in "gbsct")
    + "\U000e007f",
    "la opción descrita": "usa la opción --password y escribe la clave cuando la pida",
    "mysql prompting": "mysql -u root --password --host db app",
    "mysql password from a variable": "mysql -u root --password $MYSQL_PWD app",
    "ssh port": "ssh -p 2222 kd-abc@gpu1.example.org",
    "docker login prompting": "docker login -u ana registry.example",
    "curl user prompting": "curl -u ana https://api.example/v1",
    "curl user from variables": "curl -u $API_USER:$API_PASS https://api.example/v1",
    "url-encoded without secrets": "next=%2Fhome%3Fpage%3D2%26sort%3Dname",
    "una clave descrita": "falta la línea BEGIN PRIVATE KEY del fichero",
}


@pytest.mark.parametrize("prose", sorted(PROSE))
@pytest.mark.parametrize("name", sorted(NEGATIVES))
def test_look_alikes_stay(name, prose):
    before, after = PROSE[prose]
    text = before + NEGATIVES[name] + after
    result = redact(text)
    assert result.text == text
    assert result.findings == ()


def test_a_token_as_a_file_name_is_removed():
    ticket = problem_ticket(
        owner=make_user(), attachments=[services.Upload(f"{HF}.txt", b"just a log\n")]
    )
    attachment = Attachment.objects.get(message__ticket=ticket)
    assert HF not in attachment.name
    assert attachment.name == f"{REMOVED}.txt"
    assert attachment.redactions[0]["kind"] == "huggingface_token"


@pytest.mark.parametrize(
    "image",
    [
        png_bytes(trailer=f"\nHF_TOKEN={HF}\n".encode()),
        png_bytes(extra_chunks=[(b"tEXt", b"Comment\x00" + HF.encode())]),
        jpeg_bytes(trailer=f"key {HF}".encode()),
        jpeg_bytes(comment=HF.encode()),
        png_bytes(extra_chunks=[(b"prVt", f"token {HF}".encode())]),
        png_bytes(extra_chunks=[(b"eXIf", b"MM\x00*\x00\x00\x00\x08" + HF.encode())]),
        jpeg_bytes(segments=[(b"\xe1", b"Exif\x00\x00MM\x00*" + HF.encode())]),
        jpeg_bytes(
            segments=[(b"\xe1", b"http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta>" + HF.encode())]
        ),
        jpeg_bytes(segments=[(b"\xed", b"Photoshop 3.0\x00" + HF.encode())]),
    ],
    ids=[
        "png trailer",
        "png text chunk",
        "jpeg trailer",
        "jpeg comment",
        "png private chunk",
        "png exif chunk",
        "jpeg exif",
        "jpeg xmp",
        "jpeg app13",
    ],
)
def test_text_hidden_in_an_image_is_cut_off_and_reported(image):
    ticket = problem_ticket(owner=make_user(), attachments=[services.Upload("shot.img", image)])
    attachment = Attachment.objects.get(message__ticket=ticket)
    stored = bytes(attachment.data)
    assert HF.encode() not in stored
    assert stored in {png_bytes(), jpeg_bytes()}
    assert [r["kind"] for r in attachment.redactions] == ["huggingface_token"]


def test_a_clean_image_is_stored_as_it_came():
    profile = (b"\xe2", b"ICC_PROFILE\x00\x01\x01" + b"\x00" * 16)
    drawing = [(b"gAMA", (45455).to_bytes(4, "big")), (b"pHYs", b"\x00" * 9)]
    for image in (
        png_bytes(),
        jpeg_bytes(),
        png_bytes(extra_chunks=drawing),
        jpeg_bytes(segments=[profile]),
    ):
        ticket = problem_ticket(owner=make_user(), attachments=[services.Upload("s.png", image)])
        attachment = Attachment.objects.get(message__ticket=ticket)
        assert bytes(attachment.data) == image
        assert attachment.redactions == []


@pytest.mark.parametrize(
    "data",
    [b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, b"\xff\xd8\xff\xe0\x00\x10JFIF", png_bytes()[:-5]],
)
def test_a_broken_image_is_refused(data):
    from kernodeck.core.errors import InvalidInput

    with pytest.raises(InvalidInput) as refused:
        problem_ticket(owner=make_user(), attachments=[services.Upload("s.png", data)])
    assert "not a valid PNG or JPEG" in refused.value.message
