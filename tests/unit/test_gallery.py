"""The gallery: each competition's smoke folder holds what MLE-bench's prepare.py writes, its grader checks refuse
what the grader refuses, and every shipped config builds its kernel bundle (docs/gallery.md's tables:
test_gallery_table.py)."""
import json
import re
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from kit import config, smoke
from kit.build import bundle
from kit.data import archives
from kit.smoke import gallery, tfrecords
from kit.smoke.gallery import graders, plants, sounds

# the public folder's top level, as prepare.py leaves it (description.md is mlebench/data.py's)
LISTINGS = {
    "aerial-cactus-identification": "sample_submission.csv test.zip train.csv train.zip",
    "dogs-vs-cats-redux-kernels-edition": "sample_submission.csv test test.zip train train.zip",
    "detecting-insults-in-social-commentary": "sample_submission_null.csv test.csv train.csv",
    "random-acts-of-pizza": "sampleSubmission.csv test.json test.zip train.json train.zip",
    "imet-2020-fgvc7": "labels.csv sample_submission.csv test train train.csv",
    "plant-pathology-2021-fgvc8": "sample_submission.csv test_images train.csv train_images",
    "iwildcam-2019-fgvc6": "sample_submission.csv test.csv test_images.zip train.csv train_images.zip",
    "iwildcam-2020-fgvc7": "iwildcam2020_megadetector_results.json iwildcam2020_test_information.json "
                           "iwildcam2020_train_annotations.json sample_submission.csv test train",
    "inaturalist-2019-fgvc6": "kaggle_sample_submission.csv test2019.json test2019.tar.gz train2019.json "
                              "train_val2019.tar.gz val2019.json",
    "herbarium-2020-fgvc7": "nybg2020 sample_submission.csv",
    "herbarium-2021-fgvc8": "sample_submission.csv test train",
    "herbarium-2022-fgvc9": "sample_submission.csv test_images test_metadata.json train_images train_metadata.json",
    "whale-categorization-playground": "sample_submission.csv test train train.csv",
    "hotel-id-2021-fgvc8": "sample_submission.csv test_images train.csv train_images",
    "lmsys-chatbot-arena": "sample_submission.csv test.csv train.csv",
    "google-quest-challenge": "sample_submission.csv test.csv train.csv",
    "jigsaw-unintended-bias-in-toxicity-classification": "sample_submission.csv test.csv train.csv",
    "alaska2-image-steganalysis": "Cover JMiPOD JUNIWARD Test UERD sample_submission.csv",
    "statoil-iceberg-classifier-challenge": "sample_submission.csv.7z test.json.7z train.json.7z",
    "seti-breakthrough-listen": "old_leaky_data sample_submission.csv test train train_labels.csv",
    "stanford-covid-vaccine": "sample_submission.csv test.json train.json",
    "invasive-species-monitoring": "sample_submission.csv.zip test.7z train.7z train_labels.csv.zip",
    "movie-review-sentiment-analysis-kernels-only": "sampleSubmission.csv test.tsv.zip train.tsv.zip",
    "aptos2019-blindness-detection": "sample_submission.csv test.csv test_images train.csv train_images",
    "histopathologic-cancer-detection": "sample_submission.csv test train train_labels.csv",
    "leaf-classification": "images sample_submission.csv test.csv train.csv",
    "plant-pathology-2020-fgvc7": "images sample_submission.csv test.csv train.csv",
    "cassava-leaf-disease-classification": "label_num_to_disease_map.json sample_submission.csv test_images "
                                           "test_tfrecords train.csv train_images train_tfrecords",
    "petfinder-pawpularity-score": "sample_submission.csv test test.csv train train.csv",
    "jigsaw-toxic-comment-classification-challenge": "sample_submission.csv test.csv train.csv",
    "spooky-author-identification": "sample_submission.csv test.csv train.csv",
    "us-patent-phrase-to-phrase-matching": "sample_submission.csv test.csv train.csv",
    "ranzcr-clip-catheter-line-classification": "sample_submission.csv test train train.csv train_annotations.csv",
    "siim-isic-melanoma-classification": "jpeg sample_submission.csv test test.csv tfrecords train train.csv",
    "tweet-sentiment-extraction": "sample_submission.csv test.csv train.csv",
    "the-icml-2013-whale-challenge-right-whale-redux": "sampleSubmission.csv test2.zip train2.zip",
    "tensorflow-speech-recognition-challenge": "sample_submission.csv test train",
    "champs-scalar-coupling": "dipole_moments.csv magnetic_shielding_tensors.csv mulliken_charges.csv potential_energy.csv "
                              "sample_submission.csv scalar_coupling_contributions.csv structures structures.csv test.csv "
                              "train.csv",
    "osic-pulmonary-fibrosis-progression": "sample_submission.csv test test.csv train train.csv",
    "chaii-hindi-and-tamil-question-answering": "sample_submission.csv test.csv train.csv",
    "google-research-identify-contrails-reduce-global-warming": "sample_submission.csv test train train_metadata.json "
                                                                "validation validation_metadata.json",
    "uw-madison-gi-tract-image-segmentation": "sample_submission.csv test test.csv train train.csv",
    "predict-volcanic-eruptions-ingv-oe": "sample_submission.csv test train train.csv",
    "mlsp-2013-birds": "essential_data sample_submission.csv supplemental_data",
    "freesound-audio-tagging-2019": "sample_submission.csv test.zip train_curated.csv train_curated.zip train_noisy.csv "
                                    "train_noisy.zip",
    "text-normalization-challenge-english-language": "en_sample_submission_2.csv.zip en_test_2.csv.zip en_train.csv.zip",
    "text-normalization-challenge-russian-language": "ru_sample_submission_2.csv.zip ru_test_2.csv.zip ru_train.csv.zip",
    "tensorflow2-question-answering": "sample_submission.csv simplified-nq-test.jsonl simplified-nq-train.jsonl",
    "hms-harmful-brain-activity-classification": "example_figures sample_submission.csv test.csv test_eegs "
                                                 "test_spectrograms train.csv train_eegs train_spectrograms",
    "vinbigdata-chest-xray-abnormalities-detection": "sample_submission.csv test train train.csv",
    "siim-covid19-detection": "sample_submission.csv test train train_image_level.csv train_study_level.csv",
    "hubmap-kidney-segmentation": "HuBMAP-20-dataset_information.csv sample_submission.csv test train train.csv",
    "vesuvius-challenge-ink-detection": "sample_submission.csv test train",
    "billion-word-imputation": "test_v2.txt.zip train_v2.txt.zip",  # no public sample: test_v2.txt is its shape
    "kuzushiji-recognition": "sample_submission.csv test_images.zip train.csv train_images.zip unicode_translation.csv",
}
# the first line of a file, as prepare.py writes it
HEADERS = {
    "aerial-cactus-identification": {"train.csv": "id,has_cactus", "sample_submission.csv": "id,has_cactus"},
    "dogs-vs-cats-redux-kernels-edition": {"sample_submission.csv": "id,label"},
    "detecting-insults-in-social-commentary": {"train.csv": "Insult,Date,Comment", "test.csv": "Date,Comment",
                                               "sample_submission_null.csv": "Insult,Date,Comment"},
    "random-acts-of-pizza": {"sampleSubmission.csv": "request_id,requester_received_pizza", "train.json": "["},
    "imet-2020-fgvc7": {"train.csv": "id,attribute_ids", "labels.csv": "attribute_id,attribute_name",
                        "sample_submission.csv": "id,attribute_ids"},
    "plant-pathology-2021-fgvc8": {"train.csv": "image,labels", "sample_submission.csv": "image,labels"},
    "iwildcam-2019-fgvc6": {"sample_submission.csv": ",Id,Category",
                            "train.csv": "category_id,date_captured,file_name,frame_num,id,location,rights_holder,"
                                         "seq_id,seq_num_frames,width,height"},
    "iwildcam-2020-fgvc7": {"sample_submission.csv": "Id,Category"},
    "inaturalist-2019-fgvc6": {"kaggle_sample_submission.csv": "id,predicted"},
    "herbarium-2020-fgvc7": {"sample_submission.csv": "Id,Predicted"},
    "herbarium-2022-fgvc9": {"sample_submission.csv": "Id,Predicted", "test_metadata.json": "["},
    "whale-categorization-playground": {"train.csv": "Image,Id", "sample_submission.csv": "Image,Id"},
    "hotel-id-2021-fgvc8": {"train.csv": "image,chain,hotel_id,timestamp", "sample_submission.csv": "image,hotel_id"},
    "lmsys-chatbot-arena": {"train.csv": "id,model_a,model_b,prompt,response_a,response_b,winner_model_a,winner_model_b,"
                                         "winner_tie", "test.csv": "id,prompt,response_a,response_b",
                            "sample_submission.csv": "id,winner_model_a,winner_model_b,winner_tie"},
    "jigsaw-unintended-bias-in-toxicity-classification": {"test.csv": "id,comment_text",
                                                          "sample_submission.csv": "id,prediction"},
    "alaska2-image-steganalysis": {"sample_submission.csv": "Id,Label"},
    "seti-breakthrough-listen": {"train_labels.csv": "id,target", "sample_submission.csv": "id,target"},
    "stanford-covid-vaccine": {"sample_submission.csv": "id_seqpos,reactivity,deg_Mg_pH10,deg_pH10,deg_Mg_50C,deg_50C"},
    "movie-review-sentiment-analysis-kernels-only": {"sampleSubmission.csv": "PhraseId,Sentiment"},
    "aptos2019-blindness-detection": {"train.csv": "id_code,diagnosis", "test.csv": "id_code",
                                      "sample_submission.csv": "id_code,diagnosis"},
    "histopathologic-cancer-detection": {"train_labels.csv": "id,label", "sample_submission.csv": "id,label"},
    "plant-pathology-2020-fgvc7": {"train.csv": "image_id,healthy,multiple_diseases,rust,scab", "test.csv": "image_id",
                                   "sample_submission.csv": "image_id,healthy,multiple_diseases,rust,scab"},
    "cassava-leaf-disease-classification": {"train.csv": "image_id,label", "sample_submission.csv": "image_id,label"},
    "petfinder-pawpularity-score": {"sample_submission.csv": "Id,Pawpularity",
                                    "train.csv": "Id,Subject Focus,Eyes,Face,Near,Action,Accessory,Group,Collage,Human,"
                                                 "Occlusion,Info,Blur,Pawpularity"},
    "jigsaw-toxic-comment-classification-challenge": {
        "train.csv": "id,comment_text,toxic,severe_toxic,obscene,threat,insult,identity_hate", "test.csv": "id,comment_text",
        "sample_submission.csv": "id,toxic,severe_toxic,obscene,threat,insult,identity_hate"},
    "spooky-author-identification": {"train.csv": "id,text,author", "test.csv": "id,text",
                                     "sample_submission.csv": "id,EAP,HPL,MWS"},
    "us-patent-phrase-to-phrase-matching": {"train.csv": "id,anchor,target,context,score",
                                            "test.csv": "id,anchor,target,context", "sample_submission.csv": "id,score"},
    "ranzcr-clip-catheter-line-classification": {
        "train.csv": "StudyInstanceUID,ETT - Abnormal,ETT - Borderline,ETT - Normal,NGT - Abnormal,NGT - Borderline,"
                     "NGT - Incompletely Imaged,NGT - Normal,CVC - Abnormal,CVC - Borderline,CVC - Normal,"
                     "Swan Ganz Catheter Present,PatientID",
        "train_annotations.csv": "StudyInstanceUID,label,data",
        "sample_submission.csv": "StudyInstanceUID,ETT - Abnormal,ETT - Borderline,ETT - Normal,NGT - Abnormal,"
                                 "NGT - Borderline,NGT - Incompletely Imaged,NGT - Normal,CVC - Abnormal,CVC - Borderline"},
    "siim-isic-melanoma-classification": {
        "train.csv": "image_name,patient_id,sex,age_approx,anatom_site_general_challenge,diagnosis,benign_malignant,target",
        "test.csv": "image_name,patient_id,sex,age_approx,anatom_site_general_challenge",
        "sample_submission.csv": "image_name,target"},
    "tweet-sentiment-extraction": {"train.csv": "textID,text,selected_text,sentiment", "test.csv": "textID,text,sentiment",
                                   "sample_submission.csv": "textID,selected_text"},
    "the-icml-2013-whale-challenge-right-whale-redux": {"sampleSubmission.csv": "clip,probability"},
    "tensorflow-speech-recognition-challenge": {"sample_submission.csv": "fname,label"},
    "champs-scalar-coupling": {
        "train.csv": "id,molecule_name,atom_index_0,atom_index_1,type,scalar_coupling_constant",
        "test.csv": "id,molecule_name,atom_index_0,atom_index_1,type", "sample_submission.csv": "id,scalar_coupling_constant",
        "structures.csv": "molecule_name,atom_index,atom,x,y,z", "dipole_moments.csv": "molecule_name,X,Y,Z",
        "magnetic_shielding_tensors.csv": "molecule_name,atom_index,XX,YX,ZX,XY,YY,ZY,XZ,YZ,ZZ",
        "mulliken_charges.csv": "molecule_name,atom_index,mulliken_charge",
        "potential_energy.csv": "molecule_name,potential_energy",
        "scalar_coupling_contributions.csv": "molecule_name,atom_index_0,atom_index_1,type,fc,sd,pso,dso"},
    "osic-pulmonary-fibrosis-progression": {"train.csv": "Patient,Weeks,FVC,Percent,Age,Sex,SmokingStatus",
                                            "test.csv": "Patient,Weeks,FVC,Percent,Age,Sex,SmokingStatus",
                                            "sample_submission.csv": "Patient_Week,FVC,Confidence"},
    "chaii-hindi-and-tamil-question-answering": {"train.csv": "id,context,question,answer_text,answer_start,language",
                                                 "test.csv": "id,context,question,language",
                                                 "sample_submission.csv": "id,PredictionString"},
    "google-research-identify-contrails-reduce-global-warming": {
        "sample_submission.csv": "record_id,encoded_pixels,height,width"},
    "uw-madison-gi-tract-image-segmentation": {"train.csv": "id,class,segmentation", "test.csv": "id,class",
                                               "sample_submission.csv": "id,class,predicted"},
    "predict-volcanic-eruptions-ingv-oe": {"train.csv": "segment_id,time_to_eruption",
                                           "sample_submission.csv": "segment_id,time_to_eruption"},
    "mlsp-2013-birds": {"sample_submission.csv": "Id,Probability", "essential_data/CVfolds_2.txt": "rec_id,fold",
                        "essential_data/rec_id2filename.txt": "rec_id,filename",
                        "essential_data/rec_labels_test_hidden.txt": "rec_id,[labels]",
                        "essential_data/species_list.txt": "class_id,code,species",
                        "supplemental_data/segment_features.txt": "rec_id,[histogram of segment features]"},
    "freesound-audio-tagging-2019": {"train_curated.csv": "fname,labels", "train_noisy.csv": "fname,labels",
                                     "sample_submission.csv": "fname," + ",".join(sounds.FREESOUND_CLASSES)},
    "tensorflow2-question-answering": {"sample_submission.csv": "example_id,PredictionString"},
    "hms-harmful-brain-activity-classification": {
        "train.csv": "eeg_id,eeg_sub_id,eeg_label_offset_seconds,spectrogram_id,spectrogram_sub_id,"
                     "spectrogram_label_offset_seconds,label_id,patient_id,expert_consensus,seizure_vote,lpd_vote,"
                     "gpd_vote,lrda_vote,grda_vote,other_vote",
        "test.csv": "spectrogram_id,eeg_id,patient_id",
        "sample_submission.csv": "eeg_id,seizure_vote,lpd_vote,gpd_vote,lrda_vote,grda_vote,other_vote"},
    "vinbigdata-chest-xray-abnormalities-detection": {
        "train.csv": "image_id,class_name,class_id,rad_id,x_min,y_min,x_max,y_max",
        "sample_submission.csv": "image_id,PredictionString"},
    "hubmap-kidney-segmentation": {"train.csv": "id,encoding", "sample_submission.csv": "id,predicted",
                                   "test/sample_submission.csv": "id,predicted"},
    "vesuvius-challenge-ink-detection": {"sample_submission.csv": "Id,Predicted",
                                         "train/1/inklabels_rle.csv": "Id,Predicted"},
}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Each gallery competition's smoke folder, written once for this module."""
    root = tmp_path_factory.mktemp("gallery")
    return {slug: gallery.write(slug, root / slug) for slug in gallery.slugs()}


def test_every_gallery_competition_has_its_config_maker_and_grader_checks():
    assert set(gallery.slugs()) == set(graders.CHECKS) == set(LISTINGS)
    for slug in gallery.slugs():
        assert config.load(slug).spec.slug == slug  # kit/competitions/<slug>.toml, for that competition


@pytest.mark.parametrize("slug", gallery.slugs())
def test_the_folder_holds_what_prepare_writes(written, slug):
    folder = written[slug]
    assert sorted(p.name for p in folder.iterdir()) == sorted(LISTINGS[slug].split() + ["description.md"])
    for name, header in HEADERS.get(slug, {}).items():
        assert (folder / name).read_text().splitlines()[0] == header, name


def zip_names(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as z:
        return z.namelist()


def test_archives_hold_their_files_as_prepare_writes_them(written):
    assert all("/" not in n for n in zip_names(written["aerial-cactus-identification"] / "train.zip"))  # compress()
    assert all(n.endswith(".jpg") and "/" not in n for n in zip_names(written["iwildcam-2019-fgvc6"] / "test_images.zip"))
    assert zip_names(written["random-acts-of-pizza"] / "train.zip") == ["train.json"]
    assert zip_names(written["movie-review-sentiment-analysis-kernels-only"] / "test.tsv.zip") == ["test.tsv"]
    assert zip_names(written["invasive-species-monitoring"] / "train_labels.csv.zip") == ["train_labels.csv"]
    tar = written["inaturalist-2019-fgvc6"] / "train_val2019.tar.gz"
    assert tar.read_bytes()[:2] != b"\x1f\x8b"  # a plain tar, named .tar.gz
    with tarfile.open(tar, "r:") as t:
        assert all(re.fullmatch(r"Plants/\d+/[0-9a-f]+\.jpg", n) for n in t.getnames())
    image = json.loads((written["inaturalist-2019-fgvc6"] / "train2019.json").read_text())["images"][0]
    assert image["file_name"].startswith("train_val2019/Plants/")
    statoil = written["statoil-iceberg-classifier-challenge"]
    for name in ("train.json.7z", "sample_submission.csv.7z"):
        unpacked = archives.unpack(statoil / name, statoil.parent / "unpacked", lambda line: None)
        assert [p.name for p in unpacked.iterdir()] == [name[:-3]]  # one file at the archive's root


def test_ids_and_values_are_spelled_as_the_competitions_spell_them(written):
    read = pd.read_csv
    assert read(written["aerial-cactus-identification"] / "train.csv")["id"].str.fullmatch(r"[0-9a-f]{32}\.jpg").all()
    assert read(written["dogs-vs-cats-redux-kernels-edition"] / "sample_submission.csv")["id"].tolist()[:3] == [1, 2, 3]
    assert {p.name.split(".")[0] for p in (written["dogs-vs-cats-redux-kernels-edition"] / "train").iterdir()} == {"cat", "dog"}
    assert read(written["imet-2020-fgvc7"] / "train.csv")["id"].str.fullmatch(r"[0-9a-f]{16}").all()
    assert (written["imet-2020-fgvc7"] / "train.csv").read_text().count('"') == 0  # ids unquoted, as pandas writes them
    assert read(written["whale-categorization-playground"] / "train.csv")["Id"].str.fullmatch(r"w_[0-9a-f]{7}|new_whale").all()
    hotel = written["hotel-id-2021-fgvc8"]
    rows = read(hotel / "train.csv")
    assert all((hotel / "train_images" / str(c) / i).is_file() for c, i in zip(rows.chain, rows.image))
    assert all(p.is_file() for p in (hotel / "test_images").iterdir())  # flat
    alaska = written["alaska2-image-steganalysis"]
    assert sorted(p.name for p in (alaska / "Cover").iterdir()) == sorted(p.name for p in (alaska / "UERD").iterdir())
    assert all(re.fullmatch(r"\d{5}\.jpg", p.name) for p in (alaska / "Cover").iterdir())
    assert read(alaska / "sample_submission.csv")["Id"].str.fullmatch(r"\d{4}\.jpg").all()
    herbarium = json.loads((written["herbarium-2020-fgvc7"] / "nybg2020" / "test" / "metadata.json").read_text())
    assert sorted(herbarium) == ["images", "info", "licenses"] and herbarium["images"][0]["id"] == "0"
    assert herbarium["images"][0]["file_name"] == "images/000/0.jpg"
    train = json.loads((written["herbarium-2022-fgvc9"] / "train_metadata.json").read_text())
    assert re.fullmatch(r"\d{5}__\d{3}", train["images"][0]["image_id"]) and "category_id" in train["categories"][0]
    npy = next((written["seti-breakthrough-listen"] / "train").rglob("*.npy"))
    assert npy.parent.name == npy.stem[0] and np.load(npy).dtype == np.float16 and np.load(npy).shape[0] == 6
    quest = written["google-quest-challenge"]
    assert [len(read(quest / n).columns) for n in ("train.csv", "test.csv", "sample_submission.csv")] == [41, 11, 31]
    assert len(read(written["jigsaw-unintended-bias-in-toxicity-classification"] / "train.csv").columns) == 45
    steps = pd.read_json(written["stanford-covid-vaccine"] / "train.json", lines=True)
    assert steps.columns.tolist()[:9] == ["index", "id", "sequence", "structure", "predicted_loop_type", "signal_to_noise",
                                          "SN_filter", "seq_length", "seq_scored"]
    assert ",0.0000000000," in (written["stanford-covid-vaccine"] / "sample_submission.csv").read_text()


def sample(slug: str, folder: Path, tmp_path: Path) -> Path:
    return smoke.sample_path(config.load(slug).spec, folder, tmp_path)


@pytest.fixture
def answers(written, tmp_path):
    """A gallery competition's answers: its sample submission, as the grader reads it."""
    return lambda slug: graders.read(sample(slug, written[slug], tmp_path / slug))


@pytest.fixture
def refused(tmp_path):
    """Asserts that `slug`'s grader checks refuse `frame` against `truth`, with a reason matching `match`."""
    def check(slug: str, frame: pd.DataFrame, truth: pd.DataFrame, match: str) -> None:
        frame.to_csv(tmp_path / "sub.csv", index=False)  # as the grader reads it back
        with pytest.raises(graders.Invalid, match=match):
            graders.CHECKS[slug](graders.read(tmp_path / "sub.csv"), truth)
    return check


UNCHECKED_IDS = {"google-quest-challenge"}  # its grader sorts by qa_id and checks no id (the smoke's own check does)


@pytest.mark.parametrize("slug", gallery.slugs())
def test_the_sample_submission_passes_its_graders_checks_and_a_wrong_shape_does_not(written, slug, tmp_path):
    path = sample(slug, written[slug], tmp_path)
    gallery.check(slug, path, path)
    good = graders.read(path)
    key = config.load(slug).spec.id_column or "Comment"  # detecting-insults: the grader's id is the comment
    other = good[key].astype(object).where(good.index > 0, "not-an-id")
    wrong = {"a row short": good.iloc[:-1], "the id column renamed": good.rename(columns={key: "x"})}
    if slug not in UNCHECKED_IDS:
        wrong["an id the answers lack"] = good.assign(**{key: other})
    for name, frame in wrong.items():
        frame.to_csv(tmp_path / "sub.csv", index=False)
        with pytest.raises(graders.Invalid):
            gallery.check(slug, tmp_path / "sub.csv", path)
            pytest.fail(f"{name} passed")


def test_each_graders_own_traps(answers, refused):
    lmsys = answers("lmsys-chatbot-arena")
    refused("lmsys-chatbot-arena", lmsys.assign(winner_tie=0.5), lmsys, "do not sum to 1")  # sigmoid-like rows
    imet = answers("imet-2020-fgvc7")
    refused("imet-2020-fgvc7", imet.assign(attribute_ids=13), imet, "not text")  # every row one number: int64
    herbarium = answers("herbarium-2022-fgvc9")
    refused("herbarium-2022-fgvc9", herbarium.assign(Predicted="15504 37"), herbarium, "whole-number")
    inat = answers("inaturalist-2019-fgvc6")
    assert graders.CHECKS["inaturalist-2019-fgvc6"](inat.assign(predicted="400 401 402"), inat) is None  # first token
    refused("inaturalist-2019-fgvc6", inat.assign(predicted=400.5), inat, "whole-number")
    whale = answers("whale-categorization-playground")
    refused("whale-categorization-playground", whale.assign(extra=1), whale, "not exactly")
    refused("whale-categorization-playground", whale.assign(Id="new_whale  w_1"), whale, "single spaces")
    quest = answers("google-quest-challenge")
    refused("google-quest-challenge", quest.assign(answer_helpful=0.5), quest, "constant")
    refused("google-quest-challenge", quest.assign(host="x"), quest, "31|target columns")
    covid = answers("stanford-covid-vaccine")
    refused("stanford-covid-vaccine", covid.iloc[::-1], covid, "order")
    refused("stanford-covid-vaccine", covid.drop(columns="deg_50C"), covid, "deg_50C")
    alaska = answers("alaska2-image-steganalysis")
    refused("alaska2-image-steganalysis", alaska.assign(Label=np.nan), alaska, "empty")
    cats = answers("dogs-vs-cats-redux-kernels-edition")
    refused("dogs-vs-cats-redux-kernels-edition", cats.assign(label=1.2), cats, r"outside \[0, 1\]")
    cactus = answers("aerial-cactus-identification")
    refused("aerial-cactus-identification", cactus.assign(has_cactus="yes"), cactus, "not numbers")
    wild = answers("iwildcam-2019-fgvc6")  # its blank-headed index column is an extra column, which it allows
    assert graders.CHECKS["iwildcam-2019-fgvc6"](wild, wild) is None and "Unnamed: 0" in wild.columns


def test_labels_ids_and_side_files_of_the_text_and_scan_competitions(written):
    read = pd.read_csv
    toxic = read(written["jigsaw-toxic-comment-classification-challenge"] / "train.csv")
    assert toxic["id"].str.fullmatch(r"[0-9a-f]{16}").all() and toxic["comment_text"].str.contains("\n").any()
    assert set(toxic.iloc[:, 2:].stack()) == {0, 1}
    assert read(written["spooky-author-identification"] / "train.csv")["id"].str.fullmatch(r"id\d{5}").all()
    assert set(read(written["us-patent-phrase-to-phrase-matching"] / "train.csv")["score"]) <= {0, 0.25, 0.5, 0.75, 1}
    ranzcr = written["ranzcr-clip-catheter-line-classification"]
    rows = read(ranzcr / "train.csv")
    assert rows["StudyInstanceUID"].str.fullmatch(r"1\.2\.826\.0\.1\.3680043\.8\.498\.\d+").all()
    assert all((ranzcr / "train" / f"{uid}.jpg").is_file() for uid in rows["StudyInstanceUID"])
    assert rows["PatientID"].nunique() < len(rows)  # patients with several x-rays: the folds' groups
    assert set(read(ranzcr / "train_annotations.csv")["StudyInstanceUID"]) <= set(rows["StudyInstanceUID"])
    siim = written["siim-isic-melanoma-classification"]
    rows = read(siim / "train.csv")
    assert rows["image_name"].str.fullmatch(r"ISIC_\d{7}").all() and rows["patient_id"].str.fullmatch(r"IP_\d{7}").all()
    for name in rows["image_name"]:  # the JPEG kit reads, the DICOM it does not
        assert (siim / "jpeg" / "train" / f"{name}.jpg").is_file()
        assert (siim / "train" / f"{name}.dcm").read_bytes()[128:132] == b"DICM"
    assert sorted(p.name.split("-")[0] for p in (siim / "tfrecords").iterdir()) == ["test00", "train00", "train01"]


def test_the_text_and_scan_graders_traps(answers, refused):
    slug = "jigsaw-toxic-comment-classification-challenge"
    toxic = answers(slug)
    refused(slug, toxic.assign(extra=0.5), toxic, "not the 6 labels")  # roc_auc_score: y_score of 7 columns
    refused(slug, toxic[["id", *graders.TOXIC[::-1]]], toxic, "another order")
    refused(slug, toxic.drop(columns="threat"), toxic, "threat")
    slug = "spooky-author-identification"
    spooky = answers(slug)
    refused(slug, spooky.assign(EAP=0.9), spooky, "sum to 1")
    refused(slug, spooky[["EAP", "id", "HPL", "MWS"]], spooky, "first column")
    refused(slug, spooky.assign(extra=0), spooky, "shape")
    slug = "us-patent-phrase-to-phrase-matching"
    patents = answers(slug)
    refused(slug, patents.assign(score="close"), patents, "not numbers")
    slug = "ranzcr-clip-catheter-line-classification"
    ranzcr = answers(slug)
    refused(slug, ranzcr.drop(columns="CVC - Borderline"), ranzcr, "CVC - Borderline")
    refused(slug, ranzcr.assign(**{"NGT - Normal": 1.5}), ranzcr, r"outside \[0, 1\]")
    assert graders.CHECKS[slug](ranzcr.assign(**{"CVC - Normal": 0.5}), ranzcr) is None  # unscored columns may ride along
    slug = "siim-isic-melanoma-classification"
    siim = answers(slug)
    refused(slug, siim.assign(target=-0.1), siim, r"outside \[0, 1\]")


@pytest.mark.parametrize("name", config.shipped())
def test_every_shipped_config_builds_its_kernel_bundle(name, tmp_path, kaggle_user):
    built = bundle.build(name, tmp_path / name)
    assert (built.folder / "kernel-metadata.json").is_file() and built.notebook.is_file()
    meta = json.loads((built.folder / "kernel-metadata.json").read_text())
    assert meta["competition_sources"] == [config.load(name).spec.slug] and meta["enable_internet"] is False


def test_the_one_image_a_row_tables_spell_their_ids_and_files_as_prepare_writes_them(written):
    """aptos2019, histopathologic, leaf, plant-pathology-2020, cassava and petfinder: ids, the images each names,
    the feature columns, and cassava's TFRecords split as MLE-bench splits them (whole files to the test set)."""
    read = pd.read_csv
    aptos = written["aptos2019-blindness-detection"]
    train, test = read(aptos / "train.csv"), read(aptos / "test.csv")
    assert train["id_code"].str.fullmatch(r"[0-9a-f]{12}").all() and set(train["diagnosis"]) == set(range(5))
    assert test["id_code"].tolist() == read(aptos / "sample_submission.csv")["id_code"].tolist()
    assert sorted(p.stem for p in (aptos / "test_images").iterdir()) == sorted(test["id_code"])
    assert all((aptos / "train_images" / f"{i}.png").is_file() for i in train["id_code"])
    cancer = written["histopathologic-cancer-detection"]
    ids = read(cancer / "train_labels.csv")["id"]
    assert ids.str.fullmatch(r"[0-9a-f]{40}").all() and all((cancer / "train" / f"{i}.tif").is_file() for i in ids)
    assert Image.open(cancer / "train" / f"{ids[0]}.tif").format == "TIFF"
    leaf = written["leaf-classification"]
    train, test, sample = (read(leaf / n) for n in ("train.csv", "test.csv", "sample_submission.csv"))
    assert train.columns.tolist() == ["id", "species", *plants.FEATURES] and test.columns.tolist() == ["id", *plants.FEATURES]
    assert sample.columns.tolist() == ["id", *plants.SPECIES] and len(plants.SPECIES) == 99
    assert sorted(int(p.stem) for p in (leaf / "images").iterdir()) == sorted([*train["id"], *test["id"]])  # one folder
    assert Image.open(leaf / "images" / f"{train['id'][0]}.jpg").mode == "L"  # grey silhouettes
    plant = written["plant-pathology-2020-fgvc7"]
    train, test = read(plant / "train.csv"), read(plant / "test.csv")
    assert train["image_id"].tolist() == [f"Train_{i}" for i in range(len(train))]  # renumbered in the file's order
    assert test["image_id"].tolist() == [f"Test_{i}" for i in range(len(test))]
    assert train[list(plants.DISEASES_2020)].sum(axis=1).eq(1).all()  # one-hot
    assert len(list((plant / "images").iterdir())) == len(train) + len(test)
    cassava = written["cassava-leaf-disease-classification"]
    train, sample = read(cassava / "train.csv"), read(cassava / "sample_submission.csv")
    assert train["image_id"].str.fullmatch(r"\d{6,10}\.jpg").all() and train["image_id"].is_monotonic_increasing
    assert json.loads((cassava / "label_num_to_disease_map.json").read_text())["3"] == "Cassava Mosaic Disease (CMD)"
    for split, names in (("train", train["image_id"]), ("test", sample["image_id"])):
        files = sorted((cassava / f"{split}_tfrecords").iterdir())
        assert all(re.fullmatch(rf"ld_{split}\d\d-\d+\.tfrec", f.name) for f in files)
        records = [r for f in files for r in tfrecords.read(f)]
        assert sum(int(f.stem.split("-")[1]) for f in files) == len(records) == len(names)
        assert all(any(name.encode() in r for r in records) for name in names)  # its own images, whole files
    pets = written["petfinder-pawpularity-score"]
    train, test, sample = (read(pets / n) for n in ("train.csv", "test.csv", "sample_submission.csv"))
    assert train["Id"].str.fullmatch(r"[0-9a-f]{32}").all() and test.columns.tolist() == train.columns.tolist()[:-1]
    assert train["Pawpularity"].between(1, 100).all() and sample["Pawpularity"].between(1, 100).all()
    assert sample["Pawpularity"].round(2).eq(sample["Pawpularity"]).all() and sample["Pawpularity"].nunique() > 1


def test_the_one_image_a_row_graders_traps(answers, refused):
    aptos = answers("aptos2019-blindness-detection")
    refused("aptos2019-blindness-detection", aptos.assign(diagnosis=2.4), aptos, "whole grades")  # a regressed score
    leaf = answers("leaf-classification")
    refused("leaf-classification", leaf.drop(columns="Zelkova_Serrata"), leaf, "class columns")
    refused("leaf-classification", leaf.assign(Acer_Mono=0.5), leaf, "sum to 1")
    plant = answers("plant-pathology-2020-fgvc7")
    assert graders.CHECKS["plant-pathology-2020-fgvc7"](plant.assign(rust=0.9), plant) is None  # no row sum
    refused("plant-pathology-2020-fgvc7", plant.assign(rust=np.nan), plant, "empty")
    refused("plant-pathology-2020-fgvc7", plant.assign(extra=1), plant, "columns")
    pets = answers("petfinder-pawpularity-score")
    refused("petfinder-pawpularity-score", pets.assign(Pawpularity=0.5), pets, r"outside \[1, 100\]")
    cancer = answers("histopathologic-cancer-detection")
    refused("histopathologic-cancer-detection", cancer.assign(label=-0.1), cancer, r"outside \[0, 1\]")


def test_tfrecords_are_framed_and_encoded_as_tensorflow_writes_them(tmp_path):
    assert tfrecords.crc32c(b"123456789") == 0xE3069283  # CRC-32C's check value
    # Example{features: Features{feature: {"target": Feature{int64_list: Int64List{value: [1]}}}}}
    assert tfrecords.example({"target": 1}) == bytes.fromhex("0a110a0f0a06") + b"target" + bytes.fromhex("12051a030a0101")
    path = tfrecords.write([{"image_name": b"1.jpg", "target": 3}, {"image_name": b"2.jpg", "target": 4}],
                           tmp_path / "ld_train00-2.tfrec")
    records = tfrecords.read(path)
    assert len(records) == 2 and b"2.jpg" in records[1]
    blob = bytearray(path.read_bytes())
    blob[20] ^= 1
    path.write_bytes(bytes(blob))
    with pytest.raises(ValueError, match="CRC"):
        tfrecords.read(path)


def test_champs_and_osic_split_whole_molecules_and_patients_as_prepare_does(written):
    """champs: whole molecules held out, and structures.csv (and the .xyz files) of the training molecules only;
    osic: test.csv each held-out patient's first visit, the sample every such patient x every week from the held-out
    visits' first to their last, FVC 2000 and Confidence 100."""
    folder = written["champs-scalar-coupling"]
    train, test = (pd.read_csv(folder / f"{n}.csv") for n in ("train", "test"))
    structures = pd.read_csv(folder / "structures.csv")
    assert set(train["molecule_name"]).isdisjoint(test["molecule_name"]) and not set(train["id"]) & set(test["id"])
    assert set(structures["molecule_name"]) == set(train["molecule_name"])
    assert sorted(p.stem for p in (folder / "structures").iterdir()) == sorted(train["molecule_name"].unique())
    assert set(train["type"]) <= {"1JHC", "1JHN", "2JHH", "2JHC", "2JHN", "3JHH", "3JHC", "3JHN"}
    folder = written["osic-pulmonary-fibrosis-progression"]
    train, test, sample = (pd.read_csv(folder / f"{n}.csv") for n in ("train", "test", "sample_submission"))
    assert set(train["Patient"]).isdisjoint(test["Patient"]) and test["Patient"].is_unique
    patients = sample["Patient_Week"].str.rpartition("_")
    assert list(patients[0].unique()) == sorted(test["Patient"], key=list(patients[0].unique()).index)
    weeks = patients[2].astype(int)
    assert (patients.groupby(0)[2].count() == weeks.max() - weeks.min() + 1).all()
    assert (sample["FVC"] == 2000).all() and (sample["Confidence"] == 100).all()
    assert sorted(p.name for p in (folder / "test").iterdir()) == sorted(test["Patient"])
