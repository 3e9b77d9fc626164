"""Watch-only derivation, checked against published vectors of the BIP39 test mnemonic.

Sources of the vectors (all for "abandon … about", no passphrase):
- BIP84 test vectors, bitcoin/bips bip-0084.mediawiki: m/84'/0'/0'/0/0 and /0/1 addresses and
  the account zprv. The account zpub is asserted in Electrum's
  electrum/tests/test_wallet_vertical.py (test_bip39_seed_bip84_native_segwit).
- Litecoin m/84'/2'/0' account xpub and /0/0, /0/1 addresses: alexdupre/bitcoin-lib,
  src/test/scala/com/alexdupre/litecoin/BIP84Spec.scala ("BIP 84 … changed for litecoin").
- Ethereum m/44'/60'/0'/0/0: ethereum-optimism/optimism,
  packages/optimism-provider/test/common.ts ("Address derived at m/44'/60'/0'/0 of test
  mnemonic").
- Tron m/44'/195'/0'/0/0: the Tron Ledger app README (fbsobreira/trx-ledger, since moved to
  LedgerHQ/app-tron), section "Test Case".
Every other value below (testnet formats, Solana) is cross-checked only by derivation:
watch-only from the account public key against bip-utils' private derivation from the seed.
"""

from io import StringIO

import pytest
from bip_utils import (
    Base58Decoder,
    Base58Encoder,
    Bip39SeedGenerator,
    Bip44,
    Bip44Changes,
    Bip44Coins,
    Bip84,
    Bip84Coins,
)
from django.core.management import CommandError, call_command

from kernodeck.payments.wallets import (
    DEMO_MNEMONIC,
    Chain,
    WalletConfigError,
    demo_wallet,
    derive_address,
    load_wallets,
    new_solana_reference,
    parse_public_key,
    validate_solana_address,
)

BIP84_ZPUB = (
    "zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkg"
    "DKf31mGDtKsAYz2oz2AGutZYs"
)
BIP84_ZPRV = (
    "zprvAdG4iTXWBoARxkkzNpNh8r6Qag3irQB8PzEMkAFeTRXxHpbF9z4QgEvBRmfvqWvGp42t42nvgGpNgYSJA9"
    "iefm1yYNZKEm7z6qUWCroSQnE"
)
BIP84_WIF_0 = "KyZpNDKnfs94vbrwhJneDi77V6jF64PWPF8x5cdJb8ifgg2DUc9d"  # m/84'/0'/0'/0/0
LITECOIN_ACCOUNT_XPUB = (
    "xpub6CjGURuDpczf6uNrCCwfhVizn5J3hsWcvZ2m6GAdmAjZnoWJPrx6TFPjGSftc2o5fvox6ubQjSXmjjaHZj"
    "wYMH7SGFpHHb9Jg24zBf66mbE"
)
# BIP39's own test vector mnemonic: a second, unrelated wallet ("not the demo key").
OTHER_MNEMONIC = "legal winner thank year wave sausage worth useful legal winner thank yellow"

SCHEMES = {
    # (chain, testnet): (class, coin) of the private-side derivation
    ("bitcoin", False): (Bip84, Bip84Coins.BITCOIN),
    ("bitcoin", True): (Bip84, Bip84Coins.BITCOIN_TESTNET),
    ("litecoin", False): (Bip84, Bip84Coins.LITECOIN),
    ("litecoin", True): (Bip84, Bip84Coins.LITECOIN_TESTNET),
    ("ethereum", False): (Bip44, Bip44Coins.ETHEREUM),
    ("ethereum", True): (Bip44, Bip44Coins.ETHEREUM),
    ("tron", False): (Bip44, Bip44Coins.TRON),
    ("tron", True): (Bip44, Bip44Coins.TRON),
}


def account(chain, testnet, mnemonic=DEMO_MNEMONIC):
    """The private account node m/purpose'/coin'/0' of a mnemonic, derived from the seed."""
    cls, coin = SCHEMES[(chain, testnet)]
    seed = Bip39SeedGenerator(mnemonic).Generate()
    return cls.FromSeed(seed, coin).Purpose().Coin().Account(0)


def reencode(key, version_hex):
    """The same extended key under other version bytes (zpub <-> xpub and so on)."""
    payload = Base58Decoder.CheckDecode(key)
    return Base58Encoder.CheckEncode(bytes.fromhex(version_hex) + payload[4:])


# --- published vectors -----------------------------------------------------------------


def test_bip84_published_receive_addresses_from_the_account_zpub():
    assert derive_address("bitcoin", BIP84_ZPUB, 0, testnet=False) == (
        "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
    )
    assert derive_address("bitcoin", BIP84_ZPUB, 1, testnet=False) == (
        "bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g"
    )


def test_bip84_account_exported_as_xpub_gives_the_same_addresses_and_fingerprint():
    xpub = reencode(BIP84_ZPUB, "0488b21e")
    assert xpub.startswith("xpub")
    assert derive_address("bitcoin", xpub, 0, testnet=False) == (
        "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
    )
    zpub_wallet = load_wallets(
        keys={"bitcoin": BIP84_ZPUB}, solana_recipient="", testnet=False, demo=False
    )["bitcoin"]
    xpub_wallet = load_wallets(
        keys={"bitcoin": xpub}, solana_recipient="", testnet=False, demo=False
    )["bitcoin"]
    assert xpub_wallet.public_key == xpub
    assert xpub_wallet.fingerprint == zpub_wallet.fingerprint


def test_demo_bitcoin_key_is_the_published_bip84_account_zpub():
    wallet = demo_wallet("bitcoin", testnet=False)
    assert wallet.public_key == BIP84_ZPUB
    assert wallet.is_demo is True
    assert wallet.testnet is False


def test_litecoin_published_addresses_from_the_account_xpub():
    assert derive_address("litecoin", LITECOIN_ACCOUNT_XPUB, 0, testnet=False) == (
        "ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh"
    )
    assert derive_address("litecoin", LITECOIN_ACCOUNT_XPUB, 1, testnet=False) == (
        "ltc1qwlezpr3890hcp6vva9twqh27mr6edadreqvhnn"
    )


def test_litecoin_demo_zpub_and_ltub_encode_the_published_account():
    demo = demo_wallet("litecoin", testnet=False).public_key
    assert demo.startswith("zpub")  # bip-utils' Litecoin BIP84 key version
    assert reencode(demo, "0488b21e") == LITECOIN_ACCOUNT_XPUB
    ltub = reencode(demo, "019da462")
    assert ltub.startswith("Ltub")
    for key in (demo, ltub):
        assert derive_address("litecoin", key, 0, testnet=False) == (
            "ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh"
        )


def test_ethereum_published_first_address_is_eip55_checksummed():
    xpub = demo_wallet("ethereum", testnet=False).public_key
    assert derive_address("ethereum", xpub, 0, testnet=False) == (
        "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"
    )


def test_tron_published_first_address():
    xpub = demo_wallet("tron", testnet=False).public_key
    assert derive_address("tron", xpub, 0, testnet=False) == "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"


# --- watch-only equals private-side derivation ------------------------------------------


@pytest.mark.parametrize(("chain", "testnet"), list(SCHEMES))
@pytest.mark.parametrize("mnemonic", [DEMO_MNEMONIC, OTHER_MNEMONIC])
def test_watch_only_derivation_equals_private_derivation(chain, testnet, mnemonic):
    private_account = account(chain, testnet, mnemonic)
    xpub = private_account.PublicKey().ToExtended()
    assert parse_public_key(chain, xpub, testnet=testnet) == xpub
    receive = private_account.Change(Bip44Changes.CHAIN_EXT)
    for index in (0, 1, 2, 19, 1000, 2**31 - 1):
        from_seed = receive.AddressIndex(index).PublicKey().ToAddress()
        assert derive_address(chain, xpub, index, testnet=testnet) == from_seed


@pytest.mark.parametrize(
    ("chain", "testnet", "first_address"),
    [
        ("bitcoin", True, "tb1q6rz28mcfaxtmd6v789l9rrlrusdprr9pqcpvkl"),
        ("litecoin", True, "tltc1q6rz28mcfaxtmd6v789l9rrlrusdprr9pesrjxk"),
        ("ethereum", True, "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"),  # same on Sepolia
        ("tron", True, "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"),  # same on Nile/Shasta
    ],
)
def test_testnet_formats(chain, testnet, first_address):
    wallet = demo_wallet(chain, testnet=testnet)
    assert wallet.testnet is True
    assert derive_address(chain, wallet.public_key, 0, testnet=True) == first_address


def test_testnet_keys_use_testnet_versions_and_coin_type_1():
    assert demo_wallet("bitcoin", testnet=True).public_key.startswith("vpub")
    assert demo_wallet("litecoin", testnet=True).public_key.startswith("ttub")
    tpub = reencode(demo_wallet("bitcoin", testnet=True).public_key, "043587cf")
    assert derive_address("bitcoin", tpub, 0, testnet=True) == (
        "tb1q6rz28mcfaxtmd6v789l9rrlrusdprr9pqcpvkl"
    )


# --- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chain", "secret"),
    [
        ("bitcoin", BIP84_ZPRV),
        ("bitcoin", reencode(BIP84_ZPRV, "0488ade4")),  # the same key as xprv
        ("bitcoin", BIP84_WIF_0),
        ("bitcoin", "e284129cc0922579a535bbf4d1a3b25773090d28c909bc0fed73b5e0222cc372"),
        ("ethereum", account("ethereum", False).PrivateKey().ToExtended()),
        ("litecoin", account("litecoin", True).PrivateKey().ToExtended()),
        ("tron", DEMO_MNEMONIC),
    ],
)
def test_private_key_is_refused_without_echoing_it(chain, secret):
    with pytest.raises(WalletConfigError) as caught:
        parse_public_key(chain, secret, testnet=False)
    message = str(caught.value)
    assert f"KERNODECK_XPUB_{chain.upper()}" in message
    assert "never be given to the server" in message
    assert "PUBLIC key instead" in message
    assert secret not in message
    assert secret[:12] not in message


def test_private_extended_key_message_says_private_key():
    with pytest.raises(WalletConfigError, match="holds a private key"):
        parse_public_key("bitcoin", BIP84_ZPRV, testnet=False)


@pytest.mark.parametrize(
    "text",
    ["", "not a key", "zpub", BIP84_ZPUB[:-1] + "t", BIP84_ZPUB[:-3], "0OIl" * 20],
)
def test_malformed_key_is_refused_naming_the_setting_and_the_expected_key(text):
    with pytest.raises(WalletConfigError) as caught:
        parse_public_key("bitcoin", text, testnet=False)
    assert str(caught.value) == (
        "KERNODECK_XPUB_BITCOIN is not a valid extended public key: expected zpub… or xpub… "
        "(BIP84 account m/84'/0'/0')."
    )


def test_malformed_ethereum_key_message_names_the_bip44_path():
    with pytest.raises(WalletConfigError) as caught:
        parse_public_key("ethereum", "xpub-nonsense", testnet=False)
    assert str(caught.value) == (
        "KERNODECK_XPUB_ETHEREUM is not a valid extended public key: expected xpub… "
        "(BIP44 account m/44'/60'/0')."
    )


@pytest.mark.parametrize("depth", [0, 1, 2, 4])
def test_key_that_is_not_account_level_is_refused(depth):
    seed = Bip39SeedGenerator(DEMO_MNEMONIC).Generate()
    node = Bip84.FromSeed(seed, Bip84Coins.BITCOIN)
    steps = [lambda n: n.Purpose(), lambda n: n.Coin(), lambda n: n.Account(0)]
    steps.append(lambda n: n.Change(Bip44Changes.CHAIN_EXT))
    for step in steps[:depth]:
        node = step(node)
    key = node.PublicKey().ToExtended()
    with pytest.raises(WalletConfigError) as caught:
        parse_public_key("bitcoin", key, testnet=False)
    assert str(caught.value) == (
        f"KERNODECK_XPUB_BITCOIN is not an account-level key (depth {depth}, expected 3): "
        "export the extended public key of the account m/84'/0'/0' itself, not of the master "
        "key or of a receive chain below it."
    )


def test_key_of_the_other_network_is_refused():
    with pytest.raises(WalletConfigError) as caught:
        parse_public_key("bitcoin", BIP84_ZPUB, testnet=True)
    assert str(caught.value) == (
        "KERNODECK_XPUB_BITCOIN is a mainnet key (zpub…) but Kernodeck runs on testnet: "
        "export vpub… or tpub… for the account m/84'/1'/0', or change KERNODECK_CHAIN_MODE."
    )


def test_key_of_another_account_kind_is_refused():
    ypub = reencode(BIP84_ZPUB, "049d7cb2")
    with pytest.raises(WalletConfigError) as caught:
        parse_public_key("bitcoin", ypub, testnet=False)
    assert str(caught.value) == (
        "KERNODECK_XPUB_BITCOIN is a ypub key (BIP49 nested SegWit), but Bitcoin payments use "
        "zpub… or xpub… (BIP84 account m/84'/0'/0')."
    )
    with pytest.raises(WalletConfigError, match="Ethereum payments use xpub…"):
        parse_public_key("ethereum", BIP84_ZPUB, testnet=False)


@pytest.mark.parametrize("index", [-1, 2**31, 2**40, True, 1.0, "3"])
def test_index_outside_the_non_hardened_range_is_refused(index):
    with pytest.raises(ValueError, match="Address index"):
        derive_address("bitcoin", BIP84_ZPUB, index, testnet=False)


def test_parse_public_key_strips_blanks():
    assert parse_public_key("bitcoin", f"  {BIP84_ZPUB}\n", testnet=False) == BIP84_ZPUB


# --- load_wallets ---------------------------------------------------------------------


def test_load_wallets_without_keys_or_demo_is_empty():
    assert load_wallets(keys={}, solana_recipient="", testnet=False, demo=False) == {}
    empty = dict.fromkeys(["bitcoin", "litecoin", "ethereum", "tron"], "")
    assert load_wallets(keys=empty, solana_recipient=" ", testnet=False, demo=False) == {}


def test_load_wallets_in_demo_mode_fills_every_chain_with_demo_wallets():
    wallets = load_wallets(keys={}, solana_recipient="", testnet=False, demo=True)
    assert sorted(wallets) == sorted(chain.value for chain in Chain)
    assert all(wallet.is_demo for wallet in wallets.values())
    assert wallets["bitcoin"].public_key == BIP84_ZPUB
    assert wallets["solana"].public_key == "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk"
    assert all(len(wallet.fingerprint) == 8 for wallet in wallets.values())


def test_load_wallets_uses_given_keys_and_leaves_other_chains_out():
    xpub = account("ethereum", False, OTHER_MNEMONIC).PublicKey().ToExtended()
    wallets = load_wallets(
        keys={"bitcoin": "", "ethereum": f" {xpub} "},
        solana_recipient="",
        testnet=False,
        demo=False,
    )
    assert list(wallets) == ["ethereum"]
    wallet = wallets["ethereum"]
    assert wallet.public_key == xpub
    assert wallet.is_demo is False
    assert wallet.testnet is False
    assert wallet.fingerprint != demo_wallet("ethereum", testnet=False).fingerprint


def test_load_wallets_in_demo_mode_prefers_the_operator_key():
    xpub = account("tron", False, OTHER_MNEMONIC).PublicKey().ToExtended()
    wallets = load_wallets(keys={"tron": xpub}, solana_recipient="", testnet=False, demo=True)
    assert wallets["tron"].public_key == xpub
    assert wallets["tron"].is_demo is False
    assert wallets["bitcoin"].is_demo is True


def test_configured_public_test_key_is_still_flagged_as_demo():
    wallets = load_wallets(
        keys={"bitcoin": BIP84_ZPUB},
        solana_recipient="HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk",
        testnet=False,
        demo=False,
    )
    assert wallets["bitcoin"].is_demo is True
    assert wallets["solana"].is_demo is True


def test_load_wallets_names_the_setting_of_a_bad_key():
    with pytest.raises(WalletConfigError, match=r"^KERNODECK_XPUB_LITECOIN holds a private key"):
        load_wallets(
            keys={"litecoin": account("litecoin", False).PrivateKey().ToExtended()},
            solana_recipient="",
            testnet=False,
            demo=True,
        )
    with pytest.raises(WalletConfigError, match=r"^KERNODECK_SOLANA_RECIPIENT is not a valid"):
        load_wallets(keys={}, solana_recipient="nope", testnet=False, demo=True)


def test_load_wallets_with_a_solana_recipient():
    address = "BLeUXTx9thHGT7VJUtF9vHEmfMDgW1nnKZ9UVer2CoLX"  # OTHER_MNEMONIC m/44'/501'/0'/0'
    seed = Bip39SeedGenerator(OTHER_MNEMONIC).Generate()
    node = Bip44.FromSeed(seed, Bip44Coins.SOLANA).Purpose().Coin().Account(0)
    assert node.Change(Bip44Changes.CHAIN_EXT).PublicKey().ToAddress() == address
    wallets = load_wallets(keys={}, solana_recipient=address, testnet=True, demo=False)
    assert list(wallets) == ["solana"]
    assert wallets["solana"].public_key == address
    assert wallets["solana"].is_demo is False
    assert wallets["solana"].testnet is True


# --- Solana ---------------------------------------------------------------------------


def test_solana_demo_recipient_is_m_44_501_0_0():
    seed = Bip39SeedGenerator(DEMO_MNEMONIC).Generate()
    node = Bip44.FromSeed(seed, Bip44Coins.SOLANA).Purpose().Coin().Account(0)
    expected = node.Change(Bip44Changes.CHAIN_EXT).PublicKey().ToAddress()
    assert demo_wallet("solana", testnet=False).public_key == expected
    assert expected == "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk"


def test_solana_references_are_32_random_bytes_in_base58():
    references = [new_solana_reference() for _ in range(200)]
    assert len(set(references)) == 200
    for reference in references:
        assert len(Base58Decoder.Decode(reference)) == 32
        assert Base58Encoder.Encode(Base58Decoder.Decode(reference)) == reference


def test_valid_solana_address_is_returned_stripped():
    address = "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk"
    assert validate_solana_address(f" {address}\n") == address
    assert validate_solana_address("11111111111111111111111111111111") == (
        "11111111111111111111111111111111"  # the system program: 32 zero bytes
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3D",  # cut short: 29 bytes
        "0x9858EfFD232B4033E47d90003D41EC34EcaEda94",  # not base58
        "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH",  # a Tron address: 25 bytes
        "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqkO",
    ],
)
def test_invalid_solana_address_is_refused(text):
    with pytest.raises(WalletConfigError) as caught:
        validate_solana_address(text)
    assert str(caught.value) == (
        "KERNODECK_SOLANA_RECIPIENT is not a valid Solana address: expected the base58 public "
        "address of the receiving wallet (32 bytes, 32 to 44 characters)."
    )


def test_solana_address_that_is_not_a_wallet_key_is_refused():
    # 32 bytes that decode to no ed25519 point: what a mistyped address is about half the time.
    with pytest.raises(WalletConfigError) as caught:
        validate_solana_address("FWNMJLiAkyEHC525DSLpBVXzQk5Lc3Hn2ZoEqJsHZ7dA")
    assert str(caught.value) == (
        "KERNODECK_SOLANA_RECIPIENT is not the address of a Solana wallet (not an ed25519 "
        "public key): check it for a typo, and give the address of the wallet that receives "
        "payments."
    )


def test_solana_keypair_is_refused_as_a_private_key():
    keypair = Base58Encoder.Encode(bytes(range(64)))
    with pytest.raises(WalletConfigError, match="private key") as caught:
        validate_solana_address(keypair)
    assert keypair not in str(caught.value)


# --- the derive_address command ------------------------------------------------------------


def test_derive_address_command_prints_only_the_address():
    out = StringIO()
    call_command(
        "derive_address", "--network", "bitcoin", "--xpub", BIP84_ZPUB, "--index", "1", stdout=out
    )
    assert out.getvalue() == "bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g\n"


def test_derive_address_command_in_testnet_mode():
    out = StringIO()
    vpub = demo_wallet("litecoin", testnet=True).public_key
    call_command(
        "derive_address",
        "--network=litecoin",
        f"--xpub={vpub}",
        "--index=0",
        "--testnet",
        stdout=out,
    )
    assert out.getvalue() == "tltc1q6rz28mcfaxtmd6v789l9rrlrusdprr9pesrjxk\n"


def test_derive_address_command_refuses_a_private_key_with_the_wallet_message():
    out = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command(
            "derive_address", "--network=bitcoin", f"--xpub={BIP84_ZPRV}", "--index=0", stdout=out
        )
    assert str(caught.value).startswith("--xpub holds a private key.")
    assert BIP84_ZPRV not in str(caught.value)
    assert out.getvalue() == ""


def test_derive_address_command_refuses_a_negative_index():
    with pytest.raises(CommandError, match="--index must be from 0 to 2147483647"):
        call_command("derive_address", "--network=tron", f"--xpub={BIP84_ZPUB}", "--index=-1")
