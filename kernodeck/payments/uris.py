"""Payment URIs a wallet can open or scan, and their QR codes as inline SVG.

Amounts are exact: base units are integers and become decimal text by string arithmetic,
never through float.
"""

from html import escape
from urllib.parse import quote

import segno

BIP21_SCHEMES = {"btc-bitcoin": "bitcoin", "ltc-litecoin": "litecoin"}
ERC20_METHODS = {"usdt-ethereum", "usdc-ethereum"}
PLAIN_ADDRESS_METHODS = {"trx-tron", "usdt-tron"}


def amount_text(base_units: int, decimals: int) -> str:
    """The exact decimal amount, without trailing zeros: (123450000, 8) -> "1.2345"."""
    if isinstance(base_units, bool) or not isinstance(base_units, int) or base_units < 0:
        raise ValueError("The amount must be a whole number of base units, 0 or more.")
    if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
        raise ValueError("The number of decimals must be a whole number, 0 or more.")
    whole, fraction = divmod(base_units, 10**decimals)
    digits = str(fraction).rjust(decimals, "0").rstrip("0")
    return f"{whole}.{digits}" if digits else str(whole)


def _encoded(value):
    """Percent-encode a query value (UTF-8, spaces as %20, '&' '=' '?' '#' escaped)."""
    return quote(value, safe="")


def _labelled(params, label, message):
    if label:
        params.append(f"label={_encoded(label)}")
    if message:
        params.append(f"message={_encoded(message)}")
    return "&".join(params)


def payment_uri(
    *,
    method_code: str,
    address: str,
    base_units: int,
    decimals: int,
    chain_id: int | None = None,
    token_contract: str | None = None,
    solana_reference: str | None = None,
    label: str = "Kernodeck",
    message: str = "",
) -> str:
    """The URI the payment page shows as a link and as a QR code.

    - BTC and LTC: BIP21, `bitcoin:<address>?amount=<BTC>&label=…&message=…`; the amount is
      in whole coins as a plain decimal (no exponent).
    - ETH: EIP-681, `ethereum:<address>@<chain id>?value=<wei>`; the value is an integer
      in wei.
    - USDT and USDC on Ethereum: EIP-681 token transfer,
      `ethereum:<token contract>@<chain id>/transfer?address=<address>&uint256=<base units>`.
    - SOL: Solana Pay transfer request,
      `solana:<recipient>?amount=<SOL>&reference=<reference>&label=…&message=…`.
    - TRX and USDT on Tron: the plain address. Tron has no widely supported payment URI, so
      the page shows the amount next to it and the QR code carries the address only.

    Ethereum needs `chain_id` (a wallet on another network would otherwise pay there), ERC-20
    tokens need `token_contract`, and SOL needs `solana_reference`; a missing one, or an
    unknown method code, raises ValueError.
    """
    amount = amount_text(base_units, decimals)
    if method_code in BIP21_SCHEMES:
        params = _labelled([f"amount={amount}"], label, message)
        return f"{BIP21_SCHEMES[method_code]}:{address}?{params}"
    if method_code == "eth-ethereum" or method_code in ERC20_METHODS:
        if isinstance(chain_id, bool) or not isinstance(chain_id, int) or chain_id <= 0:
            raise ValueError(f"{method_code} needs the chain id of the Ethereum network.")
        if method_code == "eth-ethereum":
            return f"ethereum:{address}@{chain_id}?value={base_units}"
        if not token_contract:
            raise ValueError(f"{method_code} needs the token contract address.")
        return (
            f"ethereum:{token_contract}@{chain_id}/transfer?address={address}&uint256={base_units}"
        )
    if method_code == "sol-solana":
        if not solana_reference:
            raise ValueError("sol-solana needs the payment's reference key.")
        params = _labelled([f"amount={amount}", f"reference={solana_reference}"], label, message)
        return f"solana:{address}?{params}"
    if method_code in PLAIN_ADDRESS_METHODS:
        return address
    raise ValueError(f"Unknown payment method {method_code!r}.")


def qr_svg(data: str, *, title: str = "Payment QR code") -> str:
    """Inline SVG markup of a QR code (error correction M or better), black on white.

    Scale 4 with the standard 4-module quiet zone; the element is labelled for screen readers.
    """
    qr = segno.make(data, error="m", micro=False)
    svg = qr.svg_inline(scale=4, border=4, dark="#000", light="#fff", title=title)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{escape(title)}" ', 1)
