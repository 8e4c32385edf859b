"""The gallery: competitions from MLE-bench (and two beside it) that a shipped config serves, each with a maker of
its public files exactly as MLE-bench's prepare.py writes them (names, columns, id formats, archives, nested
folders) at smoke size, and the checks its grader makes on a submission (kit.smoke.gallery.graders).

The makers need no config: `write(slug, folder)` is the competition's public folder, whatever a config says,
so a config (or `kit init`) is tested against the files as they are. Each shipped config
kit/competitions/<slug>.toml is named by its competition's slug."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kit.errors import KitError
from kit.smoke.gallery import (
    articles,
    bodies,
    brains,
    catalogues,
    detections,
    graders,
    grades,
    measures,
    normalizing,
    pages,
    photos,
    plants,
    quakes,
    radiographs,
    scans,
    sentences,
    signals,
    skies,
    slides,
    sounds,
    texts,
    tweets,
    writings,
)

MAKERS: dict[str, Callable[[Path, int], None]] = {
    "aerial-cactus-identification": photos.aerial_cactus,
    "dogs-vs-cats-redux-kernels-edition": photos.dogs_vs_cats,
    "detecting-insults-in-social-commentary": texts.insults,
    "random-acts-of-pizza": texts.pizza,
    "imet-2020-fgvc7": photos.imet,
    "plant-pathology-2021-fgvc8": photos.plant_pathology_2021,
    "iwildcam-2019-fgvc6": photos.iwildcam_2019,
    "iwildcam-2020-fgvc7": catalogues.iwildcam_2020,
    "inaturalist-2019-fgvc6": catalogues.inaturalist_2019,
    "herbarium-2020-fgvc7": catalogues.herbarium(2020),
    "herbarium-2021-fgvc8": catalogues.herbarium(2021),
    "herbarium-2022-fgvc9": catalogues.herbarium(2022),
    "whale-categorization-playground": photos.whale,
    "hotel-id-2021-fgvc8": photos.hotel_id,
    "lmsys-chatbot-arena": texts.lmsys,
    "google-quest-challenge": texts.google_quest,
    "jigsaw-unintended-bias-in-toxicity-classification": texts.jigsaw,
    "alaska2-image-steganalysis": photos.alaska2,
    "statoil-iceberg-classifier-challenge": signals.statoil,
    "seti-breakthrough-listen": signals.seti,
    "stanford-covid-vaccine": signals.stanford_covid,
    "invasive-species-monitoring": photos.invasive_species,
    "movie-review-sentiment-analysis-kernels-only": texts.movie_reviews,
    "aptos2019-blindness-detection": grades.aptos,
    "histopathologic-cancer-detection": grades.histopathologic,
    "leaf-classification": plants.leaf,
    "plant-pathology-2020-fgvc7": plants.plant_pathology_2020,
    "cassava-leaf-disease-classification": plants.cassava,
    "petfinder-pawpularity-score": grades.petfinder,
    "jigsaw-toxic-comment-classification-challenge": writings.jigsaw_toxic,
    "spooky-author-identification": writings.spooky,
    "us-patent-phrase-to-phrase-matching": writings.patents,
    "ranzcr-clip-catheter-line-classification": scans.ranzcr,
    "siim-isic-melanoma-classification": scans.siim_isic,
    "tweet-sentiment-extraction": tweets.tweet_sentiment,
    "the-icml-2013-whale-challenge-right-whale-redux": sounds.whale,
    "tensorflow-speech-recognition-challenge": sounds.speech,
    "champs-scalar-coupling": measures.champs,
    "osic-pulmonary-fibrosis-progression": measures.osic,
    "chaii-hindi-and-tamil-question-answering": articles.chaii,
    "google-research-identify-contrails-reduce-global-warming": skies.contrails_dataset,
    "uw-madison-gi-tract-image-segmentation": bodies.uw_madison,
    "predict-volcanic-eruptions-ingv-oe": quakes.volcano,
    "mlsp-2013-birds": sounds.birds,
    "freesound-audio-tagging-2019": sounds.freesound,
    "text-normalization-challenge-english-language": normalizing.english,
    "text-normalization-challenge-russian-language": normalizing.russian,
    "tensorflow2-question-answering": pages.tf2qa,
    "hms-harmful-brain-activity-classification": brains.hms,
    "vinbigdata-chest-xray-abnormalities-detection": radiographs.vinbigdata,
    "hubmap-kidney-segmentation": slides.hubmap,
    "vesuvius-challenge-ink-detection": slides.vesuvius,
    "siim-covid19-detection": detections.siim_covid,
    "kuzushiji-recognition": detections.kuzushiji,
    "billion-word-imputation": sentences.billion_word,
}


def slugs() -> tuple[str, ...]:
    """The gallery's competitions, by Kaggle slug (each the name of its shipped config)."""
    return tuple(MAKERS)


def has(slug: str) -> bool:
    return slug in MAKERS


def write(slug: str, folder: Path, seed: int = 0) -> Path:
    """The competition's public files, at smoke size, written into `folder` (made; it must not exist or be
    empty). Returns `folder`."""
    if slug not in MAKERS:
        raise KitError(f"no gallery data for '{slug}' (the gallery has: {', '.join(MAKERS)})")
    if folder.exists() and any(folder.iterdir()):
        raise KitError(f"{folder} is not empty; the gallery writes a competition's files into an empty folder")
    folder.mkdir(parents=True, exist_ok=True)
    MAKERS[slug](folder, seed)
    # mlebench/data.py adds the competition's overview and data pages to every public folder
    (folder / "description.md").write_text(f"# {slug}\n\nSmoke data in MLE-bench's public layout (kit.smoke.gallery).\n")
    return folder


def check(slug: str, submission: Path, sample: Path) -> None:
    """graders.Invalid if the competition's grader would refuse `submission` (`sample`: its sample submission,
    unpacked)."""
    graders.check(slug, submission, sample)
