"""The gallery's detection makers (kit.smoke.gallery.detections) write MLE-bench's public layouts of
siim-covid19-detection and kuzushiji-recognition (their prepare.py), boxes that show in their pictures, and the
checks of their graders (kit.smoke.gallery.graders.siim_covid and kuzushiji, their grade.py) pass the samples and
refuse what the graders refuse."""
import io
import re
import zipfile

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pydicom")  # the dev extras install it; the siim maker writes DICOM files with it

from PIL import Image  # noqa: E402

from kit.data import boxes  # noqa: E402
from kit.data.dicom import read_dicom  # noqa: E402
from kit.smoke.gallery import detections, graders  # noqa: E402

SIIM_STUDY_HEADER = "id,Negative for Pneumonia,Typical Appearance,Indeterminate Appearance,Atypical Appearance"


@pytest.fixture(scope="module")
def siim(tmp_path_factory):
    folder = tmp_path_factory.mktemp("siim")
    detections.siim_covid(folder, seed=0, train=16, test=6)
    return folder


@pytest.fixture(scope="module")
def kuzushiji(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kuzushiji")
    detections.kuzushiji(folder, seed=0, train=20, test=6)
    return folder


def test_siim_is_in_prepares_layout_with_studies_series_and_images_as_dicom(siim):
    assert sorted(p.name for p in siim.iterdir()) == ["sample_submission.csv", "test", "train", "train_image_level.csv",
                                                      "train_study_level.csv"]
    assert (siim / "train_study_level.csv").read_text().splitlines()[0] == SIIM_STUDY_HEADER
    assert (siim / "train_image_level.csv").read_text().splitlines()[0] == "id,boxes,label,StudyInstanceUID"
    studies, images = pd.read_csv(siim / "train_study_level.csv"), pd.read_csv(siim / "train_image_level.csv")
    assert studies["id"].is_monotonic_increasing and images["id"].is_monotonic_increasing  # prepare sorts both by id
    assert studies["id"].str.fullmatch(r"[0-9a-f]{12}_study").all() and images["id"].str.fullmatch(r"[0-9a-f]{12}_image").all()
    files = {p.stem: p for p in (siim / "train").rglob("*.dcm")}
    assert all(re.fullmatch(r"train/[0-9a-f]{12}/[0-9a-f]{12}/[0-9a-f]{12}\.dcm", str(p.relative_to(siim)))
               for p in files.values())
    assert set(files) == {i.removesuffix("_image") for i in images["id"]}  # every training image, and only those
    assert all(files[i.removesuffix("_image")].parts[-3] == s for i, s in zip(images["id"], images["StudyInstanceUID"]))
    assert {f"{s}_study" for s in images["StudyInstanceUID"]} == set(studies["id"])
    names = boxes.read_siim_studies(studies)[2]
    assert names == ("negative", "typical", "indeterminate", "atypical")
    labels = boxes.read_siim_images(images)
    assert any(len(i.labels) for i in labels.images) and any(not len(i.labels) for i in labels.images)
    assert images["label"][images["boxes"].isna()].eq("none 1 0 0 1 1").all()
    assert images["label"][images["boxes"].notna()].str.match(r"(opacity 1( [0-9.]+){4} ?)+$").all()
    photometric = {__import__("pydicom").dcmread(p).PhotometricInterpretation for p in files.values()}
    assert photometric == {"MONOCHROME1", "MONOCHROME2"}


def test_siim_opacities_are_bright_in_the_decoded_x_rays_whatever_the_photometric(siim):
    images = pd.read_csv(siim / "train_image_level.csv")
    files = {p.stem: p for p in (siim / "train").rglob("*.dcm")}
    for record in boxes.read_siim_images(images).images:
        pixels = read_dicom(files[record.image_id.removesuffix("_image")]).astype(float)
        assert pixels.shape == (detections.SIIM_SIDE, detections.SIIM_SIDE)
        inside = np.zeros(pixels.shape, bool)
        for x0, y0, x1, y1 in record.boxes:
            cx, cy = int((x0 + x1) / 2), int((y0 + y1) / 2)
            inside[cy - 2:cy + 3, cx - 2:cx + 3] = True
        if inside.any():
            assert pixels[inside].mean() > pixels[~inside].mean() + 80


def test_siim_sample_holds_each_test_study_then_each_test_image(siim):
    sample = pd.read_csv(siim / "sample_submission.csv")
    assert sample.columns.tolist() == ["id", "PredictionString"]
    test_images = {p.stem for p in (siim / "test").rglob("*.dcm")}
    test_studies = {p.name for p in (siim / "test").iterdir()}
    study_rows, image_rows = sample[sample["id"].str.endswith("_study")], sample[sample["id"].str.endswith("_image")]
    assert sample.index[: len(study_rows)].tolist() == study_rows.index.tolist()  # studies first, as prepare writes
    assert set(study_rows["id"].str.removesuffix("_study")) == test_studies and len(study_rows) == 6
    assert set(image_rows["id"].str.removesuffix("_image")) == test_images
    assert study_rows["PredictionString"].eq("negative 1 0 0 1 1").all()
    assert image_rows["PredictionString"].eq("none 1 0 0 1 1").all()


def test_kuzushiji_is_in_prepares_layout_with_flat_zips_and_label_sequences(kuzushiji):
    assert sorted(p.name for p in kuzushiji.iterdir()) == ["sample_submission.csv", "test_images.zip", "train.csv",
                                                           "train_images.zip", "unicode_translation.csv"]
    assert (kuzushiji / "train.csv").read_text().splitlines()[0] == "image_id,labels"
    assert (kuzushiji / "unicode_translation.csv").read_text().splitlines()[0] == "Unicode,char"
    train, sample = pd.read_csv(kuzushiji / "train.csv"), pd.read_csv(kuzushiji / "sample_submission.csv")
    with zipfile.ZipFile(kuzushiji / "train_images.zip") as z:
        assert sorted(z.namelist()) == sorted(f"{i}.jpg" for i in train["image_id"])  # at the zip's root
        pages = {n[:-4]: np.asarray(Image.open(io.BytesIO(z.read(n))).convert("L"), float) for n in z.namelist()}
    with zipfile.ZipFile(kuzushiji / "test_images.zip") as z:
        assert sorted(z.namelist()) == sorted(f"{i}.jpg" for i in sample["image_id"])
    assert sample["labels"].eq("U+003F 1 1 U+FF2F 2 2").all() and sample.columns.tolist() == ["image_id", "labels"]
    labels = boxes.read_kuzushiji(train)
    assert set(labels.classes) == set(detections.KUZUSHIJI)
    assert set(labels.classes) <= set(pd.read_csv(kuzushiji / "unicode_translation.csv")["Unicode"])
    for record in labels.images:  # each character dark ink on light paper
        for x0, y0, x1, y1 in record.boxes.astype(int):
            assert pages[record.image_id][y0:y1, x0:x1].mean() < pages[record.image_id].mean() - 20


def write_read(tmp_path, frame: pd.DataFrame) -> pd.DataFrame:
    frame.to_csv(tmp_path / "sub.csv", index=False)  # as the grader reads it back
    return graders.read(tmp_path / "sub.csv")


def test_siim_checks_pass_the_sample_and_a_real_answer_and_refuse_what_its_grader_refuses(siim, tmp_path):
    sample = graders.read(siim / "sample_submission.csv")
    graders.siim_covid(sample, sample)
    answer = sample.copy()
    answer.loc[answer["id"].str.endswith("_study"), "PredictionString"] = "typical 0.7 0 0 1 1 negative 0.3 0 0 1 1"
    answer.loc[answer.index[-1], "PredictionString"] = "opacity 0.9 10.5 4 30 40.25 opacity 0.2 1 2 3 4"
    graders.siim_covid(write_read(tmp_path, answer), sample)
    bad = {"rows": answer.iloc[1:], "columns": answer.rename(columns={"PredictionString": "prediction"}),
           "not text": answer.assign(PredictionString=np.where(answer.index == 0, None, answer["PredictionString"])),
           "groups": answer.assign(PredictionString="opacity 0.9 1 2 3"),
           "number": answer.assign(PredictionString="opacity high 1 2 3 4"),
           "ids": answer.assign(id=answer["id"].str.replace("_image", "_img"))}
    for frame in bad.values():
        with pytest.raises(graders.Invalid):
            graders.siim_covid(write_read(tmp_path, frame), sample)


def test_kuzushiji_checks_pass_the_sample_and_blanks_and_refuse_what_its_grader_refuses(kuzushiji, tmp_path):
    sample = graders.read(kuzushiji / "sample_submission.csv")
    graders.kuzushiji(sample, sample)
    answer = sample.assign(labels=["U+306B 12.5 30 U+3057 40 22"] + [None] * (len(sample) - 1))  # a blank: no characters
    graders.kuzushiji(write_read(tmp_path, answer), sample)
    for frame, why in [(answer.iloc[1:], "rows"), (answer.rename(columns={"labels": "label"}), "no column"),
                       (answer.assign(labels="U+306B 12 30 U+3057 40"), "groups"),
                       (answer.assign(labels="U+306B 12  30"), "groups"),  # a doubled space: an empty token
                       (answer.assign(labels="U+306B x 30"), "number"),
                       (answer.assign(image_id=answer["image_id"] + "x"), "image_id")]:
        with pytest.raises(graders.Invalid, match=why if why != "rows" else "rows where"):
            graders.kuzushiji(write_read(tmp_path, frame), sample)
