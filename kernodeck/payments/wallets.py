"""Watch-only wallets: receive addresses derived from account-level extended PUBLIC keys.

The server never holds a private key. For each chain the operator exports the account key
(Bitcoin and Litecoin BIP84 m/84'/c'/0', Ethereum and Tron BIP44 m/44'/c'/0') and the server
derives the receive addresses m/.../0/i from it; Solana uses one recipient address and a fresh
reference key per payment (Solana Pay). A setting that is unusable fails at start-up with a
WalletConfigError that says why and what to export instead, and never repeats the key.
"""

import functools
import hashlib
import re
import secrets
from dataclasses import dataclass

from bip_utils import (
    Base58ChecksumError,
    Base58Decoder,
    Base58Encoder,
    Bip39SeedGenerator,
    Bip44,
    Bip44Changes,
    Bip44Coins,
    Bip84,
    Bip84Coins,
    Ed25519PublicKey,
    SegwitBech32Decoder,
    SegwitBech32Encoder,
)
from bip_utils.bip.conf.bip44 import Bip44ConfGetter
from bip_utils.bip.conf.bip84 import Bip84ConfGetter
from django.db import models


class Chain(models.TextChoices):
    BITCOIN = "bitcoin", "Bitcoin"
    LITECOIN = "litecoin", "Litecoin"
    ETHEREUM = "ethereum", "Ethereum"
    TRON = "tron", "Tron"
    SOLANA = "solana", "Solana"


class WalletConfigError(Exception):
    """A wallet setting is unusable; the message says why and what to do."""


@dataclass(frozen=True)
class WatchOnlyWallet:
    chain: str
    public_key: str  # the account-level xpub/zpub (or the Solana recipient address)
    fingerprint: str  # short stable id of the key, shown to operators
    testnet: bool
    is_demo: bool  # the key comes from the public BIP39 test mnemonic


# The BIP39 test mnemonic of BIP84's test vectors. Every key derived from it is public
# knowledge: bots sweep any mainnet funds sent to its addresses within seconds.
DEMO_MNEMONIC = (
    "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
)

DERIVED_CHAINS = (Chain.BITCOIN, Chain.LITECOIN, Chain.ETHEREUM, Chain.TRON)
MAX_INDEX = 2**31  # indexes from 2**31 up are hardened: not derivable from a public key

# SLIP-132 version bytes, to name what the operator pasted: (name, kind of account).
_PUBLIC_VERSIONS = {
    bytes.fromhex("0488b21e"): ("xpub", "BIP32/BIP44"),
    bytes.fromhex("049d7cb2"): ("ypub", "BIP49 nested SegWit"),
    bytes.fromhex("0295b43f"): ("Ypub", "BIP49 multisig"),
    bytes.fromhex("04b24746"): ("zpub", "BIP84 native SegWit"),
    bytes.fromhex("02aa7ed3"): ("Zpub", "native SegWit multisig"),
    bytes.fromhex("043587cf"): ("tpub", "testnet BIP32/BIP44"),
    bytes.fromhex("044a5262"): ("upub", "testnet BIP49 nested SegWit"),
    bytes.fromhex("024289ef"): ("Upub", "testnet BIP49 multisig"),
    bytes.fromhex("045f1cf6"): ("vpub", "testnet BIP84 native SegWit"),
    bytes.fromhex("02575483"): ("Vpub", "testnet native SegWit multisig"),
    bytes.fromhex("019da462"): ("Ltub", "Litecoin BIP32/BIP44"),
    bytes.fromhex("01b26ef6"): ("Mtub", "Litecoin BIP49 nested SegWit"),
    bytes.fromhex("0436f6e1"): ("ttub", "Litecoin testnet"),
}
_PRIVATE_VERSIONS = {
    bytes.fromhex(v)
    for v in (
        "0488ade4",  # xprv
        "049d7878",  # yprv
        "0295b005",  # Yprv
        "04b2430c",  # zprv
        "02aa7a99",  # Zprv
        "04358394",  # tprv
        "044a4e28",  # uprv
        "024285b5",  # Uprv
        "045f18bc",  # vprv
        "02575048",  # Vprv
        "019d9cfe",  # Ltpv
        "01b26792",  # Mtpv
        "0436ef7d",  # ttpv
    )
}


@dataclass(frozen=True)
class _Scheme:
    """How one chain, on mainnet or testnet, turns an account key into addresses."""

    bip: type  # Bip84 or Bip44
    coin: object  # the bip-utils coin enum member
    accepted: tuple[str, ...]  # version names accepted from the operator, preferred first
    path: str  # the account path the operator exports

    @property
    def standard(self):
        return "BIP84" if self.bip is Bip84 else "BIP44"

    @property
    def expected(self):
        return " or ".join(f"{name}…" for name in self.accepted)

    @property
    def canonical_version(self):
        getter = Bip84ConfGetter if self.bip is Bip84 else Bip44ConfGetter
        return getter.GetConfig(self.coin).KeyNetVersions().Public()


# Many wallets export a BIP84 account as a plain xpub/tpub (same key, other version bytes),
# so those are accepted and re-encoded with the version bip-utils expects.
_SCHEMES = {
    (Chain.BITCOIN, False): _Scheme(Bip84, Bip84Coins.BITCOIN, ("zpub", "xpub"), "m/84'/0'/0'"),
    (Chain.BITCOIN, True): _Scheme(
        Bip84, Bip84Coins.BITCOIN_TESTNET, ("vpub", "tpub"), "m/84'/1'/0'"
    ),
    (Chain.LITECOIN, False): _Scheme(
        Bip84, Bip84Coins.LITECOIN, ("zpub", "Ltub", "xpub"), "m/84'/2'/0'"
    ),
    (Chain.LITECOIN, True): _Scheme(
        Bip84, Bip84Coins.LITECOIN_TESTNET, ("ttub", "vpub", "tpub"), "m/84'/1'/0'"
    ),
    (Chain.ETHEREUM, False): _Scheme(Bip44, Bip44Coins.ETHEREUM, ("xpub",), "m/44'/60'/0'"),
    (Chain.ETHEREUM, True): _Scheme(Bip44, Bip44Coins.ETHEREUM, ("xpub",), "m/44'/60'/0'"),
    (Chain.TRON, False): _Scheme(Bip44, Bip44Coins.TRON, ("xpub",), "m/44'/195'/0'"),
    (Chain.TRON, True): _Scheme(Bip44, Bip44Coins.TRON, ("xpub",), "m/44'/195'/0'"),
}


def setting_name(chain: str) -> str:
    """The environment variable that holds a chain's key."""
    if chain == Chain.SOLANA:
        return "KERNODECK_SOLANA_RECIPIENT"
    return f"KERNODECK_XPUB_{chain.upper()}"


def _scheme(chain, testnet):
    if chain not in DERIVED_CHAINS:
        raise ValueError(f"No address derivation for chain {chain!r}.")
    return _SCHEMES[(Chain(chain), bool(testnet))]


def _private_key_error(source, scheme):
    return WalletConfigError(
        f"{source} holds a private key. Private keys must never be given to the server: it "
        "only derives receive addresses. Remove it (if it was stored on this server, treat "
        "that wallet as exposed) and export the account's extended PUBLIC key instead "
        f"({scheme.expected}, {scheme.standard} account {scheme.path})."
    )


def _canonical_key(chain, text, *, testnet, source):
    """Validate an account key and return it re-encoded with the version bip-utils expects."""
    scheme = _scheme(chain, testnet)
    malformed = WalletConfigError(
        f"{source} is not a valid extended public key: expected {scheme.expected} "
        f"({scheme.standard} account {scheme.path})."
    )
    if len(text.split()) >= 12:
        raise WalletConfigError(
            f"{source} looks like a recovery phrase. Seed words must never be given to the "
            "server (if they were stored on this server, treat that wallet as exposed); export "
            f"the account's extended PUBLIC key instead ({scheme.expected}, {scheme.path})."
        )
    if re.fullmatch(r"(0x)?[0-9a-fA-F]{64}", text):
        raise _private_key_error(source, scheme)
    try:
        payload = Base58Decoder.CheckDecode(text)
    except (ValueError, Base58ChecksumError):
        raise malformed from None
    if len(payload) in (33, 34) and payload[0] in (0x80, 0xEF, 0xB0):
        raise _private_key_error(source, scheme)  # a WIF-encoded private key
    if len(payload) != 78:
        raise malformed
    version, depth, key = payload[:4], payload[4], payload[45:]
    if version in _PRIVATE_VERSIONS or key[0] == 0x00:
        raise _private_key_error(source, scheme)
    if key[0] not in (0x02, 0x03):
        raise malformed
    name, kind = _PUBLIC_VERSIONS.get(version, (None, None))
    if name not in scheme.accepted:
        other = _SCHEMES[(Chain(chain), not testnet)]
        if name in other.accepted:
            wanted, given = ("testnet", "mainnet") if testnet else ("mainnet", "testnet")
            raise WalletConfigError(
                f"{source} is a {given} key ({name}…) but Kernodeck runs on {wanted}: "
                f"export {scheme.expected} for the account {scheme.path}, or change "
                "KERNODECK_CHAIN_MODE."
            )
        if name is not None:
            raise WalletConfigError(
                f"{source} is a {name} key ({kind}), but {Chain(chain).label} payments use "
                f"{scheme.expected} ({scheme.standard} account {scheme.path})."
            )
        raise malformed
    if depth != 3:
        raise WalletConfigError(
            f"{source} is not an account-level key (depth {depth}, expected 3): export the "
            f"extended public key of the account {scheme.path} itself, not of the master key "
            "or of a receive chain below it."
        )
    return Base58Encoder.CheckEncode(scheme.canonical_version + payload[4:])


def parse_public_key(chain: str, text: str, *, testnet: bool, source: str | None = None) -> str:
    """Return the account key stripped of blanks, or raise WalletConfigError.

    `source` names where the key came from in error messages (the environment variable by
    default, or a command-line option).
    """
    text = text.strip()
    _canonical_key(chain, text, testnet=testnet, source=source or setting_name(chain))
    return text


@functools.lru_cache(maxsize=64)
def _receive_chain(chain, public_key, testnet):
    """The m/.../0 node of an account: every receive address is one public child of it."""
    scheme = _scheme(chain, testnet)
    canonical = _canonical_key(chain, public_key, testnet=testnet, source=setting_name(chain))
    account = scheme.bip.FromExtendedKey(canonical, scheme.coin)
    return account.Change(Bip44Changes.CHAIN_EXT)


# regtest (KERNODECK_CHAIN_MODE=regtest) uses the testnet keys and derivation, and
# spells the same witness program with its own bech32 prefix.
REGTEST_HRP = {Chain.BITCOIN: ("tb", "bcrt"), Chain.LITECOIN: ("tltc", "rltc")}


def derive_address(
    chain: str, public_key: str, index: int, *, testnet: bool, regtest: bool = False
) -> str:
    """The receive address m/<purpose>'/<coin>'/0'/0/<index> of the account key (with
    `regtest`: the testnet address in the regtest spelling, bcrt1…, rltc1…)."""
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < MAX_INDEX:
        raise ValueError(f"Address index must be an integer from 0 to {MAX_INDEX - 1}.")
    node = _receive_chain(chain, public_key.strip(), bool(testnet or regtest))
    address = node.AddressIndex(index).PublicKey().ToAddress()
    if regtest and chain in REGTEST_HRP:
        testnet_hrp, regtest_hrp = REGTEST_HRP[Chain(chain)]
        version, program = SegwitBech32Decoder.Decode(testnet_hrp, address)
        address = SegwitBech32Encoder.Encode(regtest_hrp, version, program)
    return address


def _canonical(chain, public_key, testnet):
    """The key in one encoding per account (the Solana address as it is)."""
    if chain == Chain.SOLANA:
        return public_key.strip()
    return _canonical_key(chain, public_key.strip(), testnet=testnet, source=setting_name(chain))


def key_fingerprint(chain: str, public_key: str, *, testnet: bool) -> str:
    """First 8 hex digits of the SHA-256 of the key in its canonical encoding.

    The same account gives the same fingerprint whether it was exported as xpub or zpub, so an
    operator who re-enters it differently does not look like a new wallet.
    """
    return hashlib.sha256(_canonical(chain, public_key, testnet).encode()).hexdigest()[:8]


@functools.lru_cache(maxsize=1)
def _demo_seed():
    return Bip39SeedGenerator(DEMO_MNEMONIC).Generate()


@functools.lru_cache(maxsize=16)
def demo_wallet(chain: str, *, testnet: bool) -> WatchOnlyWallet:
    """The wallet of the public BIP39 test mnemonic ("abandon … about"), for demo mode only.

    These keys are public knowledge: anyone can spend what is sent to their addresses, so
    they must never receive funds. They exist so a demo shows real-looking addresses.
    """
    chain = Chain(chain)
    if chain == Chain.SOLANA:
        node = Bip44.FromSeed(_demo_seed(), Bip44Coins.SOLANA).Purpose().Coin().Account(0)
        public_key = node.Change(Bip44Changes.CHAIN_EXT).PublicKey().ToAddress()
    else:
        scheme = _scheme(chain, testnet)
        node = scheme.bip.FromSeed(_demo_seed(), scheme.coin).Purpose().Coin().Account(0)
        public_key = node.PublicKey().ToExtended()
    return WatchOnlyWallet(
        chain=chain.value,
        public_key=public_key,
        fingerprint=key_fingerprint(chain, public_key, testnet=testnet),
        testnet=bool(testnet),
        is_demo=True,
    )


def validate_solana_address(text: str) -> str:
    """Return the address stripped of blanks if it can be a wallet's address, else raise."""
    text = text.strip()
    source = setting_name(Chain.SOLANA)
    try:
        raw = Base58Decoder.Decode(text) if text else b""
    except ValueError:
        raw = b""
    if len(raw) == 64:
        raise WalletConfigError(
            f"{source} looks like a Solana keypair (a private key). Private keys must never "
            "be given to the server: set the wallet's public address instead."
        )
    if len(raw) != 32:
        raise WalletConfigError(
            f"{source} is not a valid Solana address: expected the base58 public address "
            "of the receiving wallet (32 bytes, 32 to 44 characters)."
        )
    # Solana addresses carry no checksum; a wallet's address is an ed25519 public key, which
    # about half of mistyped addresses are not.
    if not Ed25519PublicKey.IsValidBytes(raw):
        raise WalletConfigError(
            f"{source} is not the address of a Solana wallet (not an ed25519 public key): "
            "check it for a typo, and give the address of the wallet that receives payments."
        )
    return text


def new_solana_reference() -> str:
    """A fresh Solana Pay reference key: 32 random bytes, base58-encoded."""
    return Base58Encoder.Encode(secrets.token_bytes(32))


def _wallet(chain, public_key, *, testnet):
    """A configured wallet, flagged as demo when its key is the public test key anyway."""
    demo_key = demo_wallet(chain, testnet=testnet).public_key
    return WatchOnlyWallet(
        chain=Chain(chain).value,
        public_key=public_key,
        fingerprint=key_fingerprint(chain, public_key, testnet=testnet),
        testnet=bool(testnet),
        is_demo=_canonical(chain, public_key, testnet) == _canonical(chain, demo_key, testnet),
    )


def load_wallets(
    *, keys: dict[str, str], solana_recipient: str, testnet: bool, demo: bool
) -> dict[str, WatchOnlyWallet]:
    """The wallets of the configured chains, keyed by chain.

    A chain with no key is left out, except in demo mode where it gets the demo wallet.
    A bad key raises WalletConfigError naming its environment variable. A configured key that
    is the public test key is flagged `is_demo` too, so pages warn that it is not safe.
    """
    wallets = {}
    for chain in DERIVED_CHAINS:
        text = (keys.get(chain.value) or "").strip()
        if text:
            key = parse_public_key(chain, text, testnet=testnet)
            wallets[chain.value] = _wallet(chain, key, testnet=testnet)
        elif demo:
            wallets[chain.value] = demo_wallet(chain, testnet=testnet)
    if (solana_recipient or "").strip():
        address = validate_solana_address(solana_recipient)
        wallets[Chain.SOLANA.value] = _wallet(Chain.SOLANA, address, testnet=testnet)
    elif demo:
        wallets[Chain.SOLANA.value] = demo_wallet(Chain.SOLANA, testnet=testnet)
    return wallets
