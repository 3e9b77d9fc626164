"""What a redaction reports: the marker left in the text, each kind's reason, the findings.

Apart from the rules because the labels are what the customer and staff read (translated),
and both the text rules and the seed-phrase search leave the same `[removed]` marker.
"""

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

REMOVED = "[removed]"

# Why each kind is removed, in words a customer reads next to the notice.
KIND_LABELS = {
    "private_key": _("a private key block"),
    "extended_private_key": _("a wallet's extended private key"),
    "seed_phrase": _("a wallet recovery phrase (BIP39 words)"),
    "seed_phrase_unchecked": _(
        "words that look like a wallet recovery phrase (nearly all from one BIP39 list, "
        "without a valid checksum): removed to be safe"
    ),
    "huggingface_token": _("a Hugging Face token"),
    "openai_key": _("an API key (sk-…)"),
    "github_token": _("a GitHub token"),
    "aws_key": _("an AWS access key"),
    "slack_token": _("a Slack token or webhook"),
    "jwt": _("a signed web token (JWT)"),
    "url_password": _("a password inside a URL"),
    "authorization_header": _("the credential of an Authorization header"),
    "command_password": _("a password given on a command line"),
    "keypair_array": _("a wallet keypair (an array of 64 numbers, like Solana's id.json)"),
    "wif_key": _("a Bitcoin private key (WIF)"),
    "assignment": _("a password, token or secret assignment"),
    "kernodeck_token": _("a Kernodeck API token"),
    "rental_secret": _("your rental's notebook or inference secret"),
}


@dataclass(frozen=True)
class Finding:
    kind: str
    count: int

    @property
    def label(self) -> str:
        return str(KIND_LABELS[self.kind])


@dataclass(frozen=True)
class Redacted:
    text: str
    findings: tuple[Finding, ...]

    @property
    def changed(self) -> bool:
        return bool(self.findings)

    def as_list(self) -> list[dict]:
        return [{"kind": f.kind, "label": f.label, "count": f.count} for f in self.findings]
