"""Labels held as lists (kit.data.label_lists), birds' melted target (kit.train.audio_kinds) and the pipeline's reading
of both (kit.pipelines.audio_lists), on mlsp-2013-birds' files as MLE-bench writes them (kit.smoke.gallery.sounds)."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kit.data import label_lists
from kit.errors import KitError
from kit.pipelines import audio_lists, base
from kit.smoke.gallery import sounds
from kit.spec import Spec
from kit.train.audio_kinds import STRIDE, decode
from kit.train.kinds import KINDS, Target

BIRDS = {"slug": "mlsp-2013-birds", "template": "audio", "metric": "auc_micro", "label_lists": True,
         "train": "essential_data/rec_labels_test_hidden.txt", "clip_table": "essential_data/rec_id2filename.txt",
         "split_table": "essential_data/CVfolds_2.txt", "id_column": "Id", "target_column": "Probability",
         "train_images": "essential_data/src_wavs", "test_images": "essential_data/src_wavs", "image_ext": ".wav"}


class Session:
    def __init__(self, data_dir: Path, base: dict = BIRDS, **changes):
        self.spec, self.data_dir = Spec.from_dict({**base, **changes}), data_dir

    def log(self, line: str) -> None:
        pass


@pytest.fixture(scope="module")
def birds(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("birds")
    sounds.birds(folder, recordings=20, seconds=0.5)
    return folder


def test_ragged_lines_read_labels_bare_ids_and_test_rows(tmp_path):
    path = tmp_path / "rec_labels_test_hidden.txt"
    path.write_text("rec_id,[labels]\n0,3,4\n1\n2,?\n\n3,18\n")
    read = label_lists.read_ragged(path)
    assert read.ids == ("0", "1", "2", "3") and read.labels == (("3", "4"), (), (), ("18",))
    assert read.test.tolist() == [False, False, True, False]
    rows = label_lists.label_rows(read.labels, tuple(str(k) for k in range(19)), path.name)
    assert rows.shape == (4, 19) and rows.sum() == 3 and rows[0, [3, 4]].tolist() == [1, 1] and rows[3, 18] == 1


@pytest.mark.parametrize("text, message", [
    ("rec_id,[labels]\n0,3\n0,4\n", r"^x\.txt line 3: id 0 is on line 2 already$"),
    ("rec_id,[labels]\n0,?,4\n", r"^x\.txt line 2: '0,\?,4' mixes '\?' \(a test row\) with labels$"),
    ("rec_id,[labels]\n0,,4\n", r"^x\.txt line 2: '0,,4' has an empty cell"),
    ("rec_id,[labels]\n", r"^x\.txt: no line after the header"),
])
def test_a_wrong_ragged_file_is_one_line(tmp_path, text, message):
    (tmp_path / "x.txt").write_text(text)
    with pytest.raises(KitError, match=message):
        label_lists.read_ragged(tmp_path / "x.txt")


def test_comma_lists_become_label_columns_and_a_stranger_is_one_line():
    cells = pd.Series(["Bark,Dog", "Dog", "", "Bark, Meow"])
    rows = label_lists.label_rows(cells, ("Bark", "Dog", "Meow"), "train_curated.csv")
    assert rows.tolist() == [[1, 1, 0], [0, 1, 0], [0, 0, 0], [1, 0, 1]]
    with pytest.raises(KitError, match=r"^train_curated\.csv row 2: label 'Cat' is not a class of the sample submission"):
        label_lists.label_rows(pd.Series(["Dog", "Cat"]), ("Bark", "Dog"), "train_curated.csv")
    table = pd.DataFrame({"fname": ["a.wav", "b.wav"], "labels": ["Bark,Dog", "Meow"]})
    spread = audio_lists.spread(table, ["Bark", "Dog", "Meow"], "labels", ",", "train_curated.csv")
    assert spread[["Bark", "Dog", "Meow"]].to_numpy().tolist() == [[1, 1, 0], [0, 0, 1]]


def test_the_birds_files_read_into_a_melted_target_and_each_rows_recording(birds):
    ragged = label_lists.read_ragged(birds / "essential_data" / "rec_labels_test_hidden.txt")
    assert any(len(x) == 0 and not t for x, t in zip(ragged.labels, ragged.test))  # a bare id
    sample, table, target, _, train, test, clips = audio_lists.read(Session(birds))
    assert target.kind == "melted" and target.classes == tuple(str(k) for k in range(19)) and target.outputs == 19
    hidden = [i for i, t in zip(ragged.ids, ragged.test) if t]
    assert test.count == len(hidden) == 4 and len(sample) == 4 * 19 and len(table) == train.count == 16
    names = pd.read_csv(birds / "essential_data" / "rec_id2filename.txt", dtype=str).set_index("rec_id")["filename"]
    assert [p.name for p in test.paths] == [f"{names[r]}.wav" for r in hidden]
    recs, species = decode(sample["Id"], "sample")
    assert (np.asarray(hidden)[clips] == recs.astype(str)).all() and species.max() == 18
    y = table[list(target.sources)].to_numpy()
    for rec, labels in zip(table["Id"], y):
        assert tuple(str(k) for k in np.flatnonzero(labels)) == ragged.labels[ragged.ids.index(rec)]


def test_the_melted_submission_keeps_each_rows_label_of_its_recordings_outputs():
    target = Target("melted", ("Probability",), tuple(str(k) for k in range(19)))
    sample = pd.DataFrame({"Id": [str(r * STRIDE + k) for r in (3, 7) for k in range(19)], "Probability": 0})
    per_recording = np.random.default_rng(0).random((2, 19)).astype(np.float32)
    pred = per_recording[np.repeat([0, 1], 19)]  # (sample rows, 19): each row its recording's vector
    sub = base.submission_frame(sample, target, pred)
    assert list(sub.columns) == ["Id", "Probability"]
    assert np.allclose(sub["Probability"], per_recording.ravel())
    base.validate(sub, sample, target, "Id")
    assert KINDS["melted"].pick is not None and all(k.pick is None for n, k in KINDS.items() if n != "melted")


def test_wrong_birds_files_are_one_line(birds, tmp_path):
    import shutil

    folder = tmp_path / "b"
    shutil.copytree(birds, folder)
    folds = pd.read_csv(folder / "essential_data" / "CVfolds_2.txt")
    folds.loc[folds["fold"] == 0, "fold"] = [1] + [0] * (int((folds["fold"] == 0).sum()) - 1)
    folds.to_csv(folder / "essential_data" / "CVfolds_2.txt", index=False)
    with pytest.raises(KitError, match=r"^CVfolds_2\.txt: its fold 1 recordings are not the test lines"):
        audio_lists.read(Session(folder))
    sample = pd.read_csv(birds / "sample_submission.csv")
    sample.loc[0, "Id"] = 1 * STRIDE + 2  # recording 1 is a training one
    sample.to_csv(folder / "sample_submission.csv", index=False)
    with pytest.raises(KitError, match=r"^sample_submission\.csv: recording 1 is not a test line"):
        audio_lists.read(Session(folder, split_table=""))
    with pytest.raises(KitError, match=r"^\[data\] clip_table and split_table name the recordings of ragged label lists"):
        from kit.pipelines.audio import AudioPipeline

        pipe = AudioPipeline.__new__(AudioPipeline)
        pipe.session = Session(folder, label_lists=False)
        pipe._read()


FREESOUND = {"slug": "freesound-audio-tagging-2019", "template": "audio", "metric": "lwlrap", "train": "train_curated.csv",
             "label_separator": ",", "extra_train": "train_noisy.csv", "extra_images": "train_noisy", "id_column": "fname",
             "target_column": "labels", "train_images": "train_curated", "test_images": "test", "image_ext": ""}


@pytest.mark.parametrize("top_folder", [False, True])
def test_freesounds_zips_are_read_with_or_without_a_top_folder(tmp_path, top_folder):
    """Whether Kaggle's zips hold their files at the root or in a folder named as the zip is unstated: both read."""
    import zipfile

    from kit.data import archives

    sounds.freesound(tmp_path / "data", curated=6, noisy=4, test=3, top_folder=top_folder)
    names = zipfile.ZipFile(tmp_path / "data" / "train_noisy.zip").namelist()
    assert all(n.startswith("train_noisy/") == top_folder for n in names)
    for split, table in (("train_curated", "train_curated.csv"), ("train_noisy", "train_noisy.csv"),
                         ("test", "sample_submission.csv")):
        folder = archives.find_folder(tmp_path / "data", split, "train_images", tmp_path / f"scratch{split}", lambda line: None)
        assert all((folder / f).is_file() for f in pd.read_csv(tmp_path / "data" / table)["fname"])


def test_the_noisy_set_joins_the_training_rows_weighted_and_unvalidated(tmp_path):
    import torch

    from kit.pipelines.audio import AudioData, AudioPipeline
    from kit.train.objectives import MultiLabel

    sounds.freesound(tmp_path, curated=12, noisy=8, test=3)
    pipe = AudioPipeline.__new__(AudioPipeline)
    pipe.session = Session(tmp_path, FREESOUND)
    sample, table, target, keys, train, test, clips = pipe._read()
    assert target.kind == "multi" and len(target.columns) == 80 and table.attrs["extra"] == 8 and train.count == 20
    curated = pd.read_csv(tmp_path / "train_curated.csv")
    assert table[list(target.columns)].to_numpy()[:12].sum(1).tolist() == [len(x.split(",")) for x in curated["labels"]]
    extra = np.arange(20) >= 12
    data = AudioData(table["fname"].to_numpy(str), np.zeros((20, 80)), np.arange(20), target, sample, None, None, {},
                     extra=extra)

    class P:
        folds, seed, noisy_weight = 2, 0, 0.5

    pipe.__dict__["p"] = P()
    folds = AudioPipeline.split(pipe, data)
    assert all(set(range(12, 20)) <= set(tr) and not set(v) & set(range(12, 20)) for tr, v in folds)
    P.noisy_weight = 0.0
    assert all(not set(tr) & set(range(12, 20)) for tr, _ in AudioPipeline.split(pipe, data))

    logits, target01 = torch.tensor([[2.0, -1.0], [0.5, 0.5]]), torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    rows = torch.nn.functional.binary_cross_entropy_with_logits(logits, target01, reduction="none").mean(1)
    out = MultiLabel()(lambda x: logits, {"image": None, "target": target01, "weight": torch.tensor([1.0, 0.5])})
    assert float(out["loss"]) == pytest.approx(float((rows[0] + 0.5 * rows[1]) / 1.5))
    assert float(MultiLabel()(lambda x: logits, {"image": None, "target": target01})["loss"]) == pytest.approx(float(rows.mean()))


def test_max_seconds_cuts_each_clip_in_the_cache_and_its_size(tmp_path):
    from kit.data import waves
    from kit.smoke.audio import tone, write

    rng = np.random.default_rng(0)
    paths = [write(tmp_path / f"{k}.wav", tone(rng, s, 8000, 440.0), 8000) for k, s in enumerate((0.5, 3.0))]
    whole = waves.build_cache(paths, 8000, tmp_path / "c", 1, log=lambda line: None)
    cut = waves.build_cache(paths, 8000, tmp_path / "c", 1, log=lambda line: None, max_frames=8000)
    assert whole.lengths().tolist() == [4000, 24000] and cut.lengths().tolist() == [4000, 8000]
    assert np.array_equal(cut.clip(1), whole.clip(1)[:8000]) and cut.path != whole.path
    found, _ = waves.headers(paths)
    assert waves.bytes_of(found, 8000, 8000) == 2 * 12000 and waves.bytes_of(found, 8000) == 2 * 28000
    assert len(waves.WaveFiles([str(p) for p in paths], 8000, max_frames=8000).clip(1)) == 8000
