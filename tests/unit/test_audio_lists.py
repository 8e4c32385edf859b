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
    def __init__(self, data_dir: Path, **changes):
        self.spec, self.data_dir = Spec.from_dict({**BIRDS, **changes}), data_dir

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
