"""text-normalization-challenge-english-language's and -russian-language's public files as MLE-bench's prepare.py
writes them: <lang>_train.csv.zip (sentence_id,token_id,class,before,after), <lang>_test_2.csv.zip
(sentence_id,token_id,before) and <lang>_sample_submission_2.csv.zip (id,after with id "<sentence_id>_<token_id>"
and after = before), each a zip of its one CSV quoted QUOTE_NONNUMERIC; train and test hold whole sentences
apart, each numbered from 0.

The smoke sentences hold real-looking tokens of Kaggle's classes: PLAIN words and PUNCT (left unchanged), CARDINAL
numbers and DATE years (spoken), LETTERS (an abbreviation, spelt out letter by letter: "BBC" -> "b b c"; in
Russian, "би би си") and MEASURE ("5 kg" -> "five kilograms"). Most of the test's tokens were seen in training (the
table answers them); new abbreviations and numbers were not (the model's)."""
from __future__ import annotations

import csv
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

EN_WORDS = ("the", "a", "in", "of", "was", "he", "she", "city", "river", "born", "team", "won", "game", "built",
            "school", "moved", "to", "and", "album", "released", "by", "first", "league", "church")
RU_WORDS = ("в", "и", "на", "году", "город", "был", "она", "река", "родился", "команда", "выиграла", "школа",
            "построен", "альбом", "вышел", "первый", "лиги", "церковь", "после", "его")
EN_ONES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
           "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
EN_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
RU_ONES = ("ноль", "один", "два", "три", "четыре", "пять", "шесть", "семь", "восемь", "девять", "десять",
           "одиннадцать", "двенадцать", "тринадцать", "четырнадцать", "пятнадцать", "шестнадцать", "семнадцать",
           "восемнадцать", "девятнадцать")
RU_TENS = ("", "", "двадцать", "тридцать", "сорок", "пятьдесят", "шестьдесят", "семьдесят", "восемьдесят",
           "девяносто")
# Latin letters read out in Russian, as ru_train's LETTERS are
RU_LETTERS = dict(zip("ABCDEFGHIKLMNOPRSTUVX", ("эй", "би", "си", "ди", "и", "эф", "джи", "эйч", "ай", "кей", "эл",
                                                "эм", "эн", "оу", "пи", "ар", "эс", "ти", "ю", "ви", "экс")))
UNITS = {"en": {"kg": "kilograms", "km": "kilometers", "m": "meters"},
         "ru": {"кг": "килограммов", "км": "километров", "м": "метров"}}


def spoken(n: int, lang: str) -> str:
    """0 to 99 in words."""
    ones, tens = (EN_ONES, EN_TENS) if lang == "en" else (RU_ONES, RU_TENS)
    if n < 20:
        return ones[n]
    return tens[n // 10] + (f" {ones[n % 10]}" if n % 10 else "")


def year(n: int, lang: str) -> str:
    """A year 1900-2099 as said: "nineteen ninety five", "two thousand five" (in Russian, the whole number)."""
    if lang == "en":
        hi, lo = divmod(n, 100)
        if hi == 20 and lo < 10:
            return "two thousand" + (f" {EN_ONES[lo]}" if lo else "")
        return f"{spoken(hi, 'en')} {'hundred' if lo == 0 else spoken(lo, 'en') if lo >= 10 else 'o ' + EN_ONES[lo]}"
    head = "тысяча девятьсот" if n < 2000 else "две тысячи"
    return head + (f" {spoken(n % 100, 'ru')}" if n % 100 else "")


def token(rng: np.random.Generator, lang: str) -> tuple[str, str, str]:
    """(class, before, after) of one smoke token."""
    u = rng.random()
    if u < 0.55:
        word = str(rng.choice(EN_WORDS if lang == "en" else RU_WORDS))
        return "PLAIN", word, word
    if u < 0.67:
        mark = str(rng.choice([".", ",", "-", '"']))
        return "PUNCT", mark, mark
    if u < 0.77:
        n = int(rng.integers(0, 100))
        return "CARDINAL", str(n), spoken(n, lang)
    if u < 0.84:
        n = int(rng.integers(1900, 2030))
        return "DATE", str(n), year(n, lang)
    if u < 0.94:
        letters = "".join(rng.choice(list(RU_LETTERS), int(rng.integers(2, 4))))
        said = " ".join(c.lower() for c in letters) if lang == "en" else " ".join(RU_LETTERS[c] for c in letters)
        return "LETTERS", letters, said
    n, (unit, name) = int(rng.integers(2, 60)), list(UNITS[lang].items())[int(rng.integers(3))]
    return "MEASURE", f"{n} {unit}", f"{spoken(n, lang)} {name}"


def sentences(rng: np.random.Generator, n: int, lang: str) -> pd.DataFrame:
    rows = []
    for sentence in range(n):
        tokens = [token(rng, lang) for _ in range(int(rng.integers(4, 10)))] + [("PUNCT", ".", ".")]
        rows += [(sentence, i, *t) for i, t in enumerate(tokens)]
    return pd.DataFrame(rows, columns=["sentence_id", "token_id", "class", "before", "after"])


def _zipped(table: pd.DataFrame, folder: Path, name: str) -> None:
    path = folder / name
    table.to_csv(path, index=False, quotechar='"', quoting=csv.QUOTE_NONNUMERIC)
    with zipfile.ZipFile(folder / f"{name}.zip", "w") as z:
        z.write(path, arcname=name)
    path.unlink()


def normalization(folder: Path, lang: str, seed: int = 0, train: int = 800, test: int = 40) -> None:
    rng = np.random.default_rng(seed)
    train_table, answers = sentences(rng, train, lang), sentences(rng, test, lang)
    test_table = answers.drop(columns=["after", "class"])
    sample = pd.DataFrame({"id": test_table["sentence_id"].astype(str) + "_" + test_table["token_id"].astype(str),
                           "after": test_table["before"]})
    _zipped(train_table, folder, f"{lang}_train.csv")
    _zipped(test_table, folder, f"{lang}_test_2.csv")
    _zipped(sample, folder, f"{lang}_sample_submission_2.csv")


def english(folder: Path, seed: int = 0) -> None:
    normalization(folder, "en", seed)


def russian(folder: Path, seed: int = 0) -> None:
    normalization(folder, "ru", seed)


def answers(folder: Path, lang: str, seed: int = 0, train: int = 800, test: int = 40) -> pd.DataFrame:
    """The smoke test set's answers (id, after), drawn as `normalization` draws them."""
    rng = np.random.default_rng(seed)
    sentences(rng, train, lang)
    table = sentences(rng, test, lang)
    return pd.DataFrame({"id": table["sentence_id"].astype(str) + "_" + table["token_id"].astype(str),
                         "after": table["after"]})
