"""The gallery's sound competitions: their MLE-bench public folders (names, archives, nested folders) at smoke
size, each label audible in its synthetic clips (kit.smoke.audio)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from kit.smoke import packing
from kit.smoke.audio import noise, to_int16, tone, upsweep, write, write_aiff

WHALE_DATES = ("20090328", "20090329", "20090330", "20090331")  # MLE-bench: the first two train, the last two test


def whale(folder: Path, seed: int = 0, train: int = 48, test: int = 16, rate: int = 2000, seconds: float = 2.0) -> None:
    """train2.zip and test2.zip, each holding its folder (shutil.make_archive(public/"train2", "zip", public,
    "train2")): train2/<date>_<HHMMSS>_<s>s<ms>ms_TRAIN<idx>_<0|1>.aif over two days, idx in time order, and
    test2/<same prefix>_Test<idx>.aif over the next two; 2 s of 16-bit mono AIFF at 2 kHz, a positive carrying a
    60 to 250 Hz upsweep in noise; sampleSubmission.csv clip,probability=0."""
    rng = np.random.default_rng(seed)
    staging = folder / ".staging"
    clips = []
    for split, count, dates in (("train2", train, WHALE_DATES[:2]), ("test2", test, WHALE_DATES[2:])):
        stamps = sorted((dates[k % 2], int(rng.integers(0, 86400))) for k in range(count))
        for idx, (date, secs) in enumerate(stamps):
            offset = rng.uniform(0, 900)
            prefix = f"{date}_{secs // 3600:02d}{secs // 60 % 60:02d}{secs % 60:02d}_{int(offset):03d}s{int(offset * 10) % 10}ms"
            label = int(rng.random() < 0.4)
            wave = upsweep(rng, seconds, rate, 60.0, 250.0) if label else noise(rng, seconds, rate, 0.08)
            name = f"{prefix}_TRAIN{idx}_{label}.aif" if split == "train2" else f"{prefix}_Test{idx}.aif"
            write_aiff(staging / split / name, to_int16(wave), rate)
            if split == "test2":
                clips.append(name)
        packing.write_zip(staging / split, folder / f"{split}.zip", prefix=split)
    shutil.rmtree(staging)
    pd.DataFrame({"clip": clips, "probability": 0}).to_csv(folder / "sampleSubmission.csv", index=False)


SPEECH_WORDS = ("yes", "no", "up", "down", "left")  # five of the 30 words


def speech(folder: Path, seed: int = 0, per_word: int = 6, rate: int = 16000) -> None:
    """train/audio/<word>/<8 hex>_nohash_<k>.wav (1 s of 16-bit PCM at 16 kHz) for five words, train/audio/
    _background_noise_/ with two 3 s noise files, test/audio/clip_<8 digits>.wav (a word each, and a 3 s noise
    file: MLE-bench's 10% split draws from every folder), sample_submission.csv fname,label=silence. A word is
    a pitch (and its octave)."""
    rng = np.random.default_rng(seed)
    audio = folder / "train" / "audio"

    def word(k: int) -> np.ndarray:
        hz = 300.0 + 180.0 * k
        return tone(rng, 1.0, rate, hz) + 0.5 * tone(rng, 1.0, rate, 2 * hz)

    for k, w in enumerate(SPEECH_WORDS):
        for j in range(per_word):
            write(audio / w / f"{rng.integers(0, 2**32):08x}_nohash_{j}.wav", word(k), rate)
    for name in ("white_noise.wav", "running_tap.wav"):
        write(audio / "_background_noise_" / name, noise(rng, 3.0, rate, 0.25), rate)
    tests = [word(k % len(SPEECH_WORDS)) for k in range(10)] + [noise(rng, 3.0, rate, 0.25)]
    order = rng.permutation(len(tests))
    names = [f"clip_{str(i).zfill(8)}.wav" for i in range(len(tests))]
    for i, k in enumerate(order):
        write(folder / "test" / "audio" / names[i], tests[k], rate)
    pd.DataFrame({"fname": names, "label": "silence"}).to_csv(folder / "sample_submission.csv", index=False)


BIRDS = (("BRCR", "Brown Creeper"), ("PAWR", "Pacific Wren"), ("PSFL", "Pacific-slope Flycatcher"),
         ("RBNU", "Red-breasted Nuthatch"), ("DEJU", "Dark-eyed Junco"), ("OSFL", "Olive-sided Flycatcher"),
         ("HETH", "Hermit Thrush"), ("CBCH", "Chestnut-backed Chickadee"), ("VATH", "Varied Thrush"),
         ("HEWA", "Hermit Warbler"), ("SWTH", "Swainson's Thrush"), ("HAFL", "Hammond's Flycatcher"),
         ("WETA", "Western Tanager"), ("BHGB", "Black-headed Grosbeak"), ("GCKI", "Golden Crowned Kinglet"),
         ("WAVI", "Warbling Vireo"), ("MGWA", "MacGillivray's Warbler"), ("STJA", "Stellar's Jay"),
         ("CONI", "Common Nighthawk"))  # species_list.txt's 19, class_id 0..18


def _bmp(path: Path) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("L", (8, 4)).save(path, format="BMP")


def birds(folder: Path, seed: int = 0, recordings: int = 60, rate: int = 16000, seconds: float = 10.0) -> None:
    """essential_data/ as MLE-bench's prepare.py writes it: CVfolds_2.txt (rec_id,fold; fold 1 the test fifth),
    rec_id2filename.txt (rec_id,filename, no .wav), rec_labels_test_hidden.txt (header `rec_id,[labels]`, then
    `3,0,4`, a bare `5` for no species, `7,?` for a test recording), species_list.txt and src_wavs/<filename>.wav
    (10 s of 16-bit mono at 16 kHz, each species a tone burst of its own pitch); supplemental_data/ as stubs (its
    bitmaps, and its segment tables with the rewritten header); sample_submission.csv Id,Probability = 0 with
    Id = rec_id * 100 + species, for rec in test for species in 0..18."""
    rng = np.random.default_rng(seed)
    essential, supplemental = folder / "essential_data", folder / "supplemental_data"
    test = np.zeros(recordings, bool)
    test[rng.choice(recordings, recordings // 5, replace=False)] = True
    names = [f"PC{1 + k % 4}_2009{6 + k % 3:02d}{1 + k % 28:02d}_{rng.integers(0, 240000):06d}_{k % 30:04d}"
             for k in range(recordings)]
    lines = []
    for rec in range(recordings):
        # every species about as frequent (a prior of label frequencies ranks nothing), a few recordings with none
        species = sorted(rng.choice(len(BIRDS), int(rng.choice([0, 1, 2, 2, 3])), replace=False).tolist())
        wave = noise(rng, seconds, rate, 0.03)
        for sp in species:  # a 3 s call at its own pitch, somewhere in the recording
            call = tone(rng, min(3.0, seconds / 2), rate, 350.0 + 85.0 * sp)  # 350 to 1,880 Hz
            start = int(rng.integers(0, len(wave) - len(call)))
            wave[start:start + len(call)] += call
        write(essential / "src_wavs" / f"{names[rec]}.wav", wave, rate)
        lines.append(f"{rec},?" if test[rec] else ",".join(map(str, [rec, *species])))
    (essential / "rec_labels_test_hidden.txt").write_text("rec_id,[labels]\n" + "".join(f"{x}\n" for x in lines))
    pd.DataFrame({"rec_id": range(recordings), "fold": test.astype(int)}).to_csv(essential / "CVfolds_2.txt", index=False)
    pd.DataFrame({"rec_id": range(recordings), "filename": names}).to_csv(essential / "rec_id2filename.txt", index=False)
    (essential / "species_list.txt").write_text("class_id,code,species\n" + "".join(
        f"{k},{code},{name}\n" for k, (code, name) in enumerate(BIRDS)))
    for k, name in enumerate(names):
        for kind in ("filtered_spectrograms", "spectrograms", "supervised_segmentation"):
            _bmp(supplemental / kind / f"{name}.bmp")
        if k % 7 == 0:
            _bmp(supplemental / "segmentation_examples" / f"{name}.bmp")
    _bmp(supplemental / "segment_clusters.bmp")
    _bmp(supplemental / "segment_mosaic.bmp")
    for table in ("histogram_of_segments", "segment_features", "segment_rectangles"):
        rows = "".join(f"{rec},{','.join(f'{v:.4f}' for v in rng.random(4))}\n" for rec in range(recordings))
        (supplemental / f"{table}.txt").write_text("rec_id,[histogram of segment features]\n" + rows)
    ids = [rec * 100 + sp for rec in np.flatnonzero(test) for sp in range(len(BIRDS))]
    pd.DataFrame({"Id": ids, "Probability": 0}).to_csv(folder / "sample_submission.csv", index=False)


FREESOUND_CLASSES = ("Accelerating_and_revving_and_vroom", "Accordion", "Acoustic_guitar", "Applause", "Bark",
                     "Bass_drum", "Bass_guitar", "Bathtub_(filling_or_washing)", "Bicycle_bell",
                     "Burping_and_eructation", "Bus", "Buzz", "Car_passing_by", "Cheering",
                     "Chewing_and_mastication", "Child_speech_and_kid_speaking", "Chink_and_clink",
                     "Chirp_and_tweet", "Church_bell", "Clapping", "Computer_keyboard", "Crackle", "Cricket",
                     "Crowd", "Cupboard_open_or_close", "Cutlery_and_silverware", "Dishes_and_pots_and_pans",
                     "Drawer_open_or_close", "Drip", "Electric_guitar", "Fart", "Female_singing",
                     "Female_speech_and_woman_speaking", "Fill_(with_liquid)", "Finger_snapping", "Frying_(food)",
                     "Gasp", "Glockenspiel", "Gong", "Gurgling", "Harmonica", "Hi-hat", "Hiss", "Keys_jangling",
                     "Knock", "Male_singing", "Male_speech_and_man_speaking", "Marimba_and_xylophone",
                     "Mechanical_fan", "Meow", "Microwave_oven", "Motorcycle", "Printer", "Purr",
                     "Race_car_and_auto_racing", "Raindrop", "Run", "Scissors", "Screaming", "Shatter", "Sigh",
                     "Sink_(filling_or_washing)", "Skateboard", "Slam", "Sneeze", "Squeak", "Stream", "Strum", "Tap",
                     "Tick-tock", "Toilet_flush", "Traffic_noise_and_roadway_noise", "Trickle_and_dribble",
                     "Walk_and_footsteps", "Water_tap_and_faucet", "Waves_and_surf", "Whispering", "Writing", "Yell",
                     "Zipper_(clothing)")  # vocabulary.py's CLASS_NAMES, in order
FREESOUND_HEARD = (3, 4, 17, 18, 37, 49)  # the classes the smoke clips sound (a pitch each); the others never occur


def freesound(folder: Path, seed: int = 0, curated: int = 48, noisy: int = 24, test: int = 16, rate: int = 44100,
              top_folder: bool = False) -> None:
    """train_curated.csv and train_noisy.csv (fname,labels: comma lists, quoted where they hold commas), the wavs in
    train_curated.zip, train_noisy.zip and test.zip (16-bit mono at 44.1 kHz, 0.3 to 4 s; each zip's files at its
    root, or with `top_folder` in a folder named as it), sample_submission.csv fname + the 80 classes = 0. A label is
    a pitch (two pitches for two labels); a noisy clip's labels are right two times in three."""
    rng = np.random.default_rng(seed)
    staging = folder / ".staging"
    heard = [FREESOUND_CLASSES[k] for k in FREESOUND_HEARD]

    def clip(labels: list[int]) -> np.ndarray:
        seconds = float(rng.uniform(0.3, 4.0))
        wave = noise(rng, seconds, rate, 0.03)
        for k in labels:
            wave += tone(rng, seconds, rate, 400.0 + 350.0 * k, level=0.25)
        return wave

    for split, count in (("train_curated", curated), ("train_noisy", noisy), ("test", test)):
        rows = []
        for _ in range(count):
            labels = sorted(rng.choice(len(heard), 1 + int(rng.random() < 0.3), replace=False).tolist())
            name = f"{rng.integers(0, 2**32):08x}.wav"
            write(staging / split / name, clip(labels), rate)
            if split == "train_noisy" and rng.random() < 1 / 3:
                labels = [int(rng.integers(0, len(heard)))]  # a wrong label, as the noisy set's often are
            rows.append((name, ",".join(heard[k] for k in labels)))
        packing.write_zip(staging / split, folder / f"{split}.zip", prefix=split if top_folder else "")
        if split == "test":
            sample = pd.DataFrame({"fname": [n for n, _ in rows], **{c: 0 for c in FREESOUND_CLASSES}})
            sample.to_csv(folder / "sample_submission.csv", index=False)
        else:
            pd.DataFrame(rows, columns=["fname", "labels"]).to_csv(folder / f"{split}.csv", index=False)
    shutil.rmtree(staging)
