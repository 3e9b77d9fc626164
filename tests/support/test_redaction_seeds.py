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


# Phrases made here by bip_utils from fixed entropy, in every official list and length.
def _generated(language, words: int) -> str:
    import hashlib
    import unicodedata

    from bip_utils import Bip39MnemonicGenerator

    entropy = hashlib.sha256(f"kernodeck-{language.name}-{words}".encode()).digest()
    phrase = str(Bip39MnemonicGenerator(language).FromEntropy(entropy[: words * 4 // 3]))
    return unicodedata.normalize("NFC", phrase)  # bip_utils gives accents decomposed


_LATIN = {"ENGLISH", "SPANISH", "FRENCH", "ITALIAN", "PORTUGUESE", "CZECH"}
# Prose around the phrase in both languages; "frase" and "seed phrase" are BIP39 words
# themselves (Spanish, English, French lists), and they stay.
PROSE = {
    "es": ("Hola, esta es mi frase:\n", "\n¿Pueden revisar mi cuenta? Gracias."),
    "en": ("Hi, this is my wallet seed phrase:\n", "\nCan you check my account? Thanks."),
}


def _generated_forms():
    for language in Bip39Languages:
        for words in (12, 24):
            phrase = _generated(language, words)
            split = phrase.split()
            forms = {
                "as generated": phrase,
                "upper case": phrase.upper(),
                "capitalised": " ".join(w.capitalize() for w in split),
                "numbered 1.word": " ".join(f"{i}.{w}" for i, w in enumerate(split, 1)),
                "numbered 1) word": _numbered(split, "{i}) {w}"),
                "bullets": _numbered(split, "• {w}"),
                "bars": " | ".join(split),
            }
            if language.name in _LATIN:
                forms["abbreviated"] = " ".join(w[:4] for w in split)
            for form, text in forms.items():
                yield pytest.param(text, id=f"{language.name.lower()}-{words}-{form}")


@pytest.mark.parametrize("prose", sorted(PROSE))
@pytest.mark.parametrize("phrase", list(_generated_forms()))
def test_a_generated_phrase_goes_in_every_list_and_the_prose_around_it_stays(phrase, prose):
    before, after = PROSE[prose]
    result = redact(before + phrase + after)
    assert result.text == before + REMOVED + after
    assert [f.kind for f in result.findings] == ["seed_phrase"]


@pytest.mark.parametrize("prose", sorted(PROSE))
@pytest.mark.parametrize("language", [Bip39Languages.SPANISH, Bip39Languages.ENGLISH])
def test_a_phrase_copied_in_two_numbered_columns_is_checked_in_its_numbers_order(language, prose):
    # Wallets show the backup as 1-6 | 7-12; copied row by row it reads 1, 7, 2, 8…
    split = _generated(language, 12).split()
    rows = "\n".join(f"{i + 1}. {split[i]}      {i + 7}. {split[i + 6]}" for i in range(6))
    before, after = PROSE[prose]
    result = redact(before + rows + after)
    assert result.text == before + REMOVED + after
    assert [f.kind for f in result.findings] == ["seed_phrase"]


@pytest.mark.parametrize("prose", sorted(PROSE))
def test_a_long_phrase_with_a_typo_goes_whole_even_when_part_of_it_checks(prose):
    # Twelve of its words may hold a valid checksum by chance (one in sixteen): the
    # stretch still goes whole, no word left behind.
    split = _generated(Bip39Languages.SPANISH, 24).split()
    split[20] = "xyzw"
    before, after = PROSE[prose]
    result = redact(before + " ".join(split) + after)
    assert result.text == before + REMOVED + after
    assert [f.kind for f in result.findings] == ["seed_phrase_unchecked"]


NOT_PHRASES_IN_PROSE = {
    "es": (
        "Tengo una duda sobre la factura: pagué el alquiler de la máquina con saldo, pero "
        "el panel dice que falta un pago. ¿Pueden mirar la cuenta y decirme qué hago? "
        "Todo lo demás funciona bien, el modelo carga y el cuaderno abre sin problema."
    ),
    "en": (
        "I have a question about the invoice: I paid for the machine from my balance, but "
        "the panel says a payment is missing. Could you look at the account and tell me "
        "what to do? Everything else works, the model loads and the notebook opens fine."
    ),
    # Eleven words of a phrase, with prose words that are not on its list before them
    # (a list word there would make twelve of one list: removed to be safe).
    "es eleven list words": "Me faltan palabras, tengo estas once: "
    + " ".join(_generated(Bip39Languages.SPANISH, 12).split()[:11])
    + ". ¿Es suficiente?",
    "en eleven list words": "I wrote down eleven words: "
    + " ".join(_generated(Bip39Languages.ENGLISH, 12).split()[:11])
    + ". Does it work?",
}


@pytest.mark.parametrize("name", sorted(NOT_PHRASES_IN_PROSE))
def test_prose_with_list_words_is_not_a_phrase(name):
    text = NOT_PHRASES_IN_PROSE[name]
    assert redact(text).text == text
