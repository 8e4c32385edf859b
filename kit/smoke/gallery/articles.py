"""chaii-hindi-and-tamil-question-answering's public files as MLE-bench's prepare.py writes them: train.csv
id,context,question,answer_text,answer_start,language (Kaggle's columns, a random nine tenths of its train.csv),
test.csv id,context,question,language (the other tenth, answer_start and answer_text dropped) and
sample_submission.csv id,PredictionString with every prediction "dummy text". An id is nine hex digits.

The smoke articles are Hindi and Tamil paragraphs, long enough to take several windows at smoke size: filler
sentences around one that says who founded a place and in which year; the question asks the year ("when") or the
founder ("who"), so the answer depends on the question. A quarter of the articles name the year again later, so
that the answer's text is in two places and answer_start marks the one the question is about."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

# the founding years, few enough that the tiny smoke tokenizer holds each as one word (chaii's real answers are
# often years; a year cut into digits leaves a tiny model's span a digit short)
YEARS = ("1192", "1336", "1469", "1526", "1556", "1605", "1674", "1757", "1799", "1857", "1885", "1947")
# words of each language's filler sentences, its founders and places, its fact sentence and its two questions
LANGUAGES = {
    "hindi": {
        "filler": ("यह", "एक", "बड़ा", "शहर", "है", "और", "में", "के", "लोग", "रहते", "नदी", "पास", "पुराना", "मंदिर",
                   "बाजार", "सड़क", "स्कूल", "गाँव", "राज्य", "देश", "सुंदर", "पहाड़", "खेत", "किसान"),
        "names": ("अशोक", "अकबर", "शिवाजी", "टैगोर", "नेहरू", "रानी लक्ष्मीबाई", "विक्रमादित्य", "हर्षवर्धन"),
        "places": ("दिल्ली", "पटना", "जयपुर", "उज्जैन", "काशी", "मथुरा", "आगरा", "प्रयाग"),
        "end": "।",
        "fact": "{name} ने {year} में {place} की स्थापना की।",
        "again": "{year} का वर्ष इतिहास में प्रसिद्ध है।",
        "when": "{place} की स्थापना कब हुई?",
        "who": "{place} की स्थापना किसने की?",
    },
    "tamil": {
        "filler": ("இது", "ஒரு", "பெரிய", "நகரம்", "ஆகும்", "மற்றும்", "மக்கள்", "வாழ்கின்றனர்", "ஆறு", "அருகில்",
                   "பழைய", "கோவில்", "சந்தை", "சாலை", "பள்ளி", "கிராமம்", "மாநிலம்", "நாடு", "அழகான", "மலை",
                   "வயல்", "விவசாயி"),
        "names": ("ராஜராஜன்", "வள்ளுவர்", "பாரதி", "கம்பன்", "அவ்வையார்", "இளங்கோ", "கரிகாலன்", "நரசிம்மவர்மன்"),
        "places": ("சென்னை", "மதுரை", "தஞ்சாவூர்", "காஞ்சிபுரம்", "திருச்சி", "கோயம்புத்தூர்", "சேலம்", "நெல்லை"),
        "end": ".",
        "fact": "{name} {year} ஆம் ஆண்டில் {place} நகரத்தை நிறுவினார்.",
        "again": "{year} ஆம் ஆண்டு வரலாற்றில் புகழ் பெற்றது.",
        "when": "{place} எப்போது நிறுவப்பட்டது?",
        "who": "{place} நகரத்தை யார் நிறுவினார்?",
    },
}


def article(rng: np.random.Generator, language: str) -> tuple[str, str, str, int]:
    """(context, question, answer_text, answer_start) of one smoke article in `language`."""
    words = LANGUAGES[language]
    name, place = str(rng.choice(words["names"])), str(rng.choice(words["places"]))
    year = str(rng.choice(YEARS))
    sentences = [" ".join(str(w) for w in rng.choice(words["filler"], size=int(rng.integers(5, 10)))) + words["end"]
                 for _ in range(int(rng.integers(10, 18)))]
    at = int(rng.integers(len(sentences)))
    sentences.insert(at, words["fact"].format(name=name, year=year, place=place))
    if rng.random() < 0.25:  # the year again, after the fact: answer_start marks the fact's
        sentences.insert(int(rng.integers(at + 1, len(sentences) + 1)), words["again"].format(year=year))
    asks = "when" if rng.random() < 0.5 else "who"
    answer = year if asks == "when" else name
    before = " ".join(sentences[:at]) + " " * (at > 0)
    start = len(before) + words["fact"].format(name=name, year=year, place=place).index(answer)
    context = " ".join(sentences)
    assert context[start : start + len(answer)] == answer
    return context, words[asks].format(place=place), answer, start


def chaii(folder: Path, seed: int = 0, train: int = 160, test: int = 24) -> None:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(train + test):
        language = str(rng.choice(["hindi", "tamil"], p=[0.65, 0.35]))  # Kaggle's train.csv: 746 Hindi, 368 Tamil
        context, question, answer, start = article(rng, language)
        rows.append((rng.bytes(5).hex()[:9], context, question, answer, start, language))
    table = pd.DataFrame(rows, columns=["id", "context", "question", "answer_text", "answer_start", "language"])
    table.iloc[:train].to_csv(folder / "train.csv", index=False)
    table.iloc[train:].drop(columns=["answer_start", "answer_text"]).to_csv(folder / "test.csv", index=False)
    sample = table.iloc[train:][["id"]].assign(PredictionString="dummy text")
    sample.to_csv(folder / "sample_submission.csv", index=False)
