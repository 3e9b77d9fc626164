"""Payment URIs (BIP21, EIP-681, Solana Pay, plain Tron address) and their QR codes.

Formats: BIP21 (bitcoin/bips bip-0021.mediawiki: amount in decimal BTC, query values
percent-encoded), EIP-681 (ethereum/EIPs EIPS/eip-681.md: `value` in wei, ERC-20 as
`<token>/transfer?address=…&uint256=…`), Solana Pay transfer request (docs.solanapay.com/spec:
amount in SOL, no scientific notation, `reference` base58, label and message URL-encoded).
"""

import re
import xml.etree.ElementTree as ET
from decimal import Decimal, localcontext

import pytest
import segno
from hypothesis import given
from hypothesis import strategies as st

from kernodeck.payments.uris import amount_text, payment_uri, qr_svg

BTC_ADDRESS = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
LTC_ADDRESS = "ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh"
ETH_ADDRESS = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"
TRON_ADDRESS = "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"
SOL_RECIPIENT = "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk"
SOL_REFERENCE = "82ZJ7nbGpixjeDCmEhUcmwXYfvurzAgGdtSMuHnUgyny"
USDT_ETHEREUM = "0xdAC17F958D2ee523a2206206994597C13D831ec7"
USDC_SEPOLIA = "0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238"
USDT_TRON = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"


# --- amount_text ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base_units", "decimals", "text"),
    [
        (123450000, 8, "1.2345"),
        (1, 8, "0.00000001"),
        (5000000, 6, "5"),
        (0, 8, "0"),
        (0, 0, "0"),
        (100000000, 8, "1"),
        (2100000000000000, 8, "21000000"),
        (10, 8, "0.0000001"),
        (1500000000, 9, "1.5"),
        (1, 9, "0.000000001"),
        (1, 18, "0.000000000000000001"),
        (2014000000000000000, 18, "2.014"),
        (2**64 + 1, 18, "18.446744073709551617"),
        (10**30, 18, "1000000000000"),
        (123456789012345678901234567890, 18, "123456789012.34567890123456789"),
        (42, 0, "42"),
    ],
)
def test_amount_text_is_exact(base_units, decimals, text):
    assert amount_text(base_units, decimals) == text


@pytest.mark.parametrize(
    ("base_units", "decimals"), [(-1, 8), (1.5, 8), (Decimal(1), 8), ("1", 8), (True, 8), (1, -1)]
)
def test_amount_text_refuses_what_is_not_whole_base_units(base_units, decimals):
    with pytest.raises(ValueError):
        amount_text(base_units, decimals)


@given(n=st.integers(min_value=0, max_value=10**40), decimals=st.sampled_from([6, 8, 9, 18]))
def test_amount_text_round_trips_exactly(n, decimals):
    text = amount_text(n, decimals)
    with localcontext(prec=80):  # the default 28 digits would round the check itself
        assert Decimal(text) * 10**decimals == n
    assert "e" not in text.lower()
    assert not (("." in text) and text.endswith("0"))
    assert not text.startswith(".")


# --- payment_uri: one exact string per method ----------------------------------------------


def test_btc_bitcoin_is_bip21():
    uri = payment_uri(
        method_code="btc-bitcoin",
        address=BTC_ADDRESS,
        base_units=123450000,
        decimals=8,
        message="Order K-7Q2 & GPU",
    )
    assert uri == (
        "bitcoin:bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
        "?amount=1.2345&label=Kernodeck&message=Order%20K-7Q2%20%26%20GPU"
    )


def test_btc_bitcoin_smallest_amount_has_no_exponent():
    uri = payment_uri(
        method_code="btc-bitcoin", address=BTC_ADDRESS, base_units=1, decimals=8, label=""
    )
    assert uri == "bitcoin:bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu?amount=0.00000001"


def test_ltc_litecoin_is_bip21_style():
    uri = payment_uri(
        method_code="ltc-litecoin", address=LTC_ADDRESS, base_units=50000000, decimals=8
    )
    assert uri == (
        "litecoin:ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh?amount=0.5&label=Kernodeck"
    )


def test_eth_ethereum_is_eip681_with_value_in_wei():
    uri = payment_uri(
        method_code="eth-ethereum",
        address=ETH_ADDRESS,
        base_units=2014000000000000000,
        decimals=18,
        chain_id=1,
        message="ignored: EIP-681 has no message",
    )
    assert uri == (
        "ethereum:0x9858EfFD232B4033E47d90003D41EC34EcaEda94@1?value=2014000000000000000"
    )


def test_eth_ethereum_on_sepolia_with_more_wei_than_fits_in_64_bits():
    uri = payment_uri(
        method_code="eth-ethereum",
        address=ETH_ADDRESS,
        base_units=2**64 + 1,
        decimals=18,
        chain_id=11155111,
    )
    assert uri == (
        "ethereum:0x9858EfFD232B4033E47d90003D41EC34EcaEda94@11155111?value=18446744073709551617"
    )


def test_usdt_ethereum_is_an_eip681_token_transfer():
    uri = payment_uri(
        method_code="usdt-ethereum",
        address=ETH_ADDRESS,
        base_units=25500000,
        decimals=6,
        chain_id=1,
        token_contract=USDT_ETHEREUM,
    )
    assert uri == (
        "ethereum:0xdAC17F958D2ee523a2206206994597C13D831ec7@1/transfer"
        "?address=0x9858EfFD232B4033E47d90003D41EC34EcaEda94&uint256=25500000"
    )


def test_usdc_ethereum_is_an_eip681_token_transfer():
    uri = payment_uri(
        method_code="usdc-ethereum",
        address=ETH_ADDRESS,
        base_units=1,
        decimals=6,
        chain_id=11155111,
        token_contract=USDC_SEPOLIA,
    )
    assert uri == (
        "ethereum:0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238@11155111/transfer"
        "?address=0x9858EfFD232B4033E47d90003D41EC34EcaEda94&uint256=1"
    )


def test_sol_solana_is_a_solana_pay_transfer_request():
    uri = payment_uri(
        method_code="sol-solana",
        address=SOL_RECIPIENT,
        base_units=1500000007,
        decimals=9,
        solana_reference=SOL_REFERENCE,
        label="Kernodeck GPU",
        message="Order K-7Q2",
    )
    assert uri == (
        "solana:HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk?amount=1.500000007"
        "&reference=82ZJ7nbGpixjeDCmEhUcmwXYfvurzAgGdtSMuHnUgyny"
        "&label=Kernodeck%20GPU&message=Order%20K-7Q2"
    )


def test_sol_solana_amount_below_one_has_a_leading_zero():
    uri = payment_uri(
        method_code="sol-solana",
        address=SOL_RECIPIENT,
        base_units=5000,
        decimals=9,
        solana_reference=SOL_REFERENCE,
    )
    assert uri == (
        "solana:HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk?amount=0.000005"
        "&reference=82ZJ7nbGpixjeDCmEhUcmwXYfvurzAgGdtSMuHnUgyny&label=Kernodeck"
    )


def test_trx_tron_is_the_plain_address():
    uri = payment_uri(method_code="trx-tron", address=TRON_ADDRESS, base_units=12345, decimals=6)
    assert uri == "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"


def test_usdt_tron_is_the_plain_address():
    uri = payment_uri(
        method_code="usdt-tron",
        address=TRON_ADDRESS,
        base_units=25500000,
        decimals=6,
        token_contract=USDT_TRON,
    )
    assert uri == "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"


def test_unknown_method_code_is_refused():
    with pytest.raises(ValueError, match="Unknown payment method 'btc-lightning'"):
        payment_uri(method_code="btc-lightning", address=BTC_ADDRESS, base_units=1, decimals=8)


@pytest.mark.parametrize(
    ("method_code", "missing", "message"),
    [
        ("eth-ethereum", {"chain_id": None}, "needs the chain id"),
        ("usdt-ethereum", {"chain_id": None}, "needs the chain id"),
        ("usdc-ethereum", {"token_contract": None}, "needs the token contract"),
        ("sol-solana", {"solana_reference": None}, "needs the payment's reference key"),
    ],
)
def test_missing_parameter_is_refused(method_code, missing, message):
    arguments = {
        "chain_id": 1,
        "token_contract": USDT_ETHEREUM,
        "solana_reference": SOL_REFERENCE,
        **missing,
    }
    with pytest.raises(ValueError, match=message):
        payment_uri(
            method_code=method_code, address=ETH_ADDRESS, base_units=1, decimals=6, **arguments
        )


def test_negative_amount_is_refused():
    with pytest.raises(ValueError):
        payment_uri(method_code="btc-bitcoin", address=BTC_ADDRESS, base_units=-1, decimals=8)


# --- qr_svg ---------------------------------------------------------------------------------


def parse_svg(svg):
    """Parse our own generated markup (trusted): proves it is well-formed XML."""
    return ET.fromstring(svg)  # noqa: S314


def dark_modules_drawn(svg_root):
    """The (row, column) cells the SVG path paints, read back from segno's line drawing.

    segno draws each row of dark modules as horizontal strokes at y = row + 0.5 in module
    units ("M x y h len m dx dy h len …"), inside the quiet zone.
    """
    path = next(el for el in svg_root.iter("path") if el.get("class") == "qrline")
    x = y = 0.0
    cells = set()
    for command, a, b in re.findall(r"([Mmh])(-?[\d.]+)(?: (-?[\d.]+))?", path.get("d")):
        if command == "M":
            x, y = float(a), float(b)
        elif command == "m":
            x, y = x + float(a), y + float(b)
        else:
            cells.update((int(y - 0.5), int(x) + i) for i in range(int(a)))
            x += float(a)
    return cells


@pytest.mark.parametrize(
    "data",
    [
        "bitcoin:bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu?amount=1.2345&label=Kernodeck",
        "ethereum:0xdAC17F958D2ee523a2206206994597C13D831ec7@1/transfer"
        "?address=0x9858EfFD232B4033E47d90003D41EC34EcaEda94&uint256=25500000",
        TRON_ADDRESS,
    ],
)
def test_qr_svg_is_well_formed_inline_svg_of_the_data(data):
    svg = qr_svg(data)
    root = parse_svg(svg)  # no XML declaration: ready to inline in HTML
    assert root.tag == "svg"
    assert not svg.startswith("<?xml")
    assert root.get("role") == "img"
    assert root.get("aria-label") == "Payment QR code"
    assert root.find("title").text == "Payment QR code"

    qr = segno.make(data, error="m", micro=False)
    assert qr.error in {"M", "Q", "H"}  # at least M; segno raises it when it fits for free
    size = qr.symbol_size(scale=4, border=4)
    assert (root.get("width"), root.get("height")) == (str(size[0]), str(size[1]))

    expected = {
        (row + 4, column + 4)
        for row, line in enumerate(qr.matrix)
        for column, dark in enumerate(line)
        if dark
    }
    assert dark_modules_drawn(root) == expected


def test_qr_svg_is_black_on_white_and_deterministic():
    svg = qr_svg(SOL_RECIPIENT)
    root = parse_svg(svg)
    paths = list(root.iter("path"))
    assert [p.get("fill") for p in paths if p.get("fill")] == ["#fff"]
    assert [p.get("stroke") for p in paths if p.get("stroke")] == ["#000"]
    assert qr_svg(SOL_RECIPIENT) == svg


def test_qr_svg_title_is_escaped():
    root = parse_svg(qr_svg("x", title='Pay "now" <fast>'))
    assert root.get("aria-label") == 'Pay "now" <fast>'
    assert root.find("title").text == 'Pay "now" <fast>'
