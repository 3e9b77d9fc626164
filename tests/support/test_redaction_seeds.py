"""Seed phrases in the forms people write them: every official list, any case, separators,
numbering, bullets, abbreviations; with a valid checksum, or nearly all words on one list."""

import pytest
from bip_utils import Bip39Languages, Bip39MnemonicValidator

from kernodeck.support.redaction import REMOVED, bip39_checksum_valid, bip39_lists, redact

# Phrases with a valid checksum (from fixed entropy; checked against bip_utils below).
EN12 = "choice enable member flame spray bleak school chaos creek payment eternal hurt"
ES = {
    12: "aislar dejar deuda atar radical mamá cuento acento árido nave ágil casero",
    15: "aislar dejar deuda atar radical mamá cuento acento árido nave ágil casco imitar ancho "
    "hablar",
    18: "aislar dejar deuda atar radical mamá cuento acento árido nave ágil casco imitar ancho "
    "guía gesto batir venir",
    21: "aislar dejar deuda atar radical mamá cuento acento árido nave ágil casco imitar ancho "
    "guía gesto batir tumor resina detalle buitre",
    24: "aislar dejar deuda atar radical mamá cuento acento árido nave ágil casco imitar ancho "
    "guía gesto batir tumor resina detalle brecha momento mucho solapa",
}


def test_the_samples_are_real_phrases():
    assert Bip39MnemonicValidator(Bip39Languages.ENGLISH).IsValid(EN12)
    for phrase in ES.values():
        assert Bip39MnemonicValidator(Bip39Languages.SPANISH).IsValid(phrase)
    english = next(w for w in bip39_lists() if w.language == "english")
    assert bip39_checksum_valid([english.lookup(w) for w in EN12.split()])
    assert not bip39_checksum_valid([english.lookup(w) for w in EN12.split()[::-1]])


def _numbered(words, fmt):
    return "\n".join(fmt.format(i=i, w=w) for i, w in enumerate(words, 1))


FORMS = {
    "capitalised": " ".join(w.capitalize() for w in EN12.split()),
    "upper case": EN12.upper(),
    "numbered 1.word": " ".join(f"{i}.{w}" for i, w in enumerate(EN12.split(), 1)),
    "numbered 1) word": _numbered(EN12.split(), "{i}) {w}"),
    "numbered (01) word": _numbered(EN12.split(), "({i:02d}) {w}"),
    "bullets one per line": _numbered(EN12.split(), "• {w}"),
    "dashes one per line": _numbered(EN12.split(), "- {w}"),
    "bar separators": " | ".join(EN12.split()),
    "semicolons": "; ".join(EN12.split()),
    "four-letter abbreviations": " ".join(w[:4] for w in EN12.split()),
    "spanish": ES[12],
    "spanish upper case without accents": "AISLAR DEJAR DEUDA ATAR RADICAL MAMA CUENTO ACENTO "
    "ARIDO NAVE AGIL CASERO",
    "spanish abbreviations": " ".join(w[:4] for w in ES[12].split()),
    "spanish numbered": _numbered(ES[12].split(), "{i}. {w}"),
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_a_phrase_with_a_valid_checksum_goes_in_any_form(name):
    text = f"Mi cartera / my wallet:\n{FORMS[name]}\n¿Pueden ayudarme?"
    result = redact(text)
    assert result.text == f"Mi cartera / my wallet:\n{REMOVED}\n¿Pueden ayudarme?"
    assert [f.kind for f in result.findings] == ["seed_phrase"]


@pytest.mark.parametrize("length", sorted(ES))
def test_every_phrase_length_goes(length):
    result = redact(f"frase {ES[length]} gracias")
    assert "aislar" not in result.text and "gracias" in result.text
    assert [f.kind for f in result.findings] == ["seed_phrase"]


def test_a_phrase_with_a_typo_goes_and_the_notice_says_the_checksum_failed():
    words = EN12.split()
    words[4] = "sprai"  # not on the list
    result = redact("mis palabras: " + " ".join(words))
    assert result.text == "mis palabras: " + REMOVED
    assert [f.kind for f in result.findings] == ["seed_phrase_unchecked"]
    assert "checksum" in result.findings[0].label


def test_list_words_without_a_checksum_go_with_the_unchecked_notice():
    words = EN12.split()[::-1]
    result = redact(" ".join(words))
    assert result.text == REMOVED
    assert [f.kind for f in result.findings] == ["seed_phrase_unchecked"]


def test_the_spanish_notice_names_the_checksum():
    from django.utils import translation

    words = ES[12].split()[::-1]
    with translation.override("es"):
        result = redact(" ".join(words))
        assert "suma de control" in result.findings[0].label


NOT_PHRASES = {
    "eleven words": " ".join(EN12.split()[:11]),
    "two halves two words apart": " ".join(EN12.split()[:6])
    + " and the "
    + " ".join(EN12.split()[6:]),
    "english prose": "I rented two GPUs for a week and the job keeps failing after the third "
    "epoch with a timeout; could you check the machine and tell me what happened?",
    "spanish prose": "Alquilé dos GPU durante una semana y el trabajo falla después de la "
    "tercera época con un error de tiempo; ¿pueden revisar la máquina y decirme qué pasó?",
    "a list of packages": "torch numpy scipy pandas tqdm wandb einops accelerate "
    "safetensors tokenizers datasets evaluate",
}


@pytest.mark.parametrize("name", sorted(NOT_PHRASES))
def test_text_that_is_not_a_phrase_stays(name):
    result = redact(NOT_PHRASES[name])
    assert result.text == NOT_PHRASES[name]
    assert result.findings == ()
