"""Archived competition files: found for the name a config gives, unpacked once outside the input folder,
reused, never half-used; traps (files at the root, plain tars named .tar.gz, members escaping the folder,
an empty 7z) and bad archives in one line each."""
import io
import os
import shutil
import tarfile
import zipfile

import pandas as pd
import pytest

from kit.data import archives, tables
from kit.errors import KitError
from kit.smoke.packing import write_7z, write_tar, write_zip


def images(folder, names=("a.jpg", "b.jpg")):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(name.encode() * 10)
    return folder


@pytest.fixture
def data(tmp_path):
    (tmp_path / "data").mkdir()
    return tmp_path / "data"


@pytest.fixture
def scratch(tmp_path):
    return tmp_path / "scratch"


def test_a_zip_with_files_at_its_root_is_the_folder(tmp_path, data, scratch):
    """aerial-cactus: train.zip holds <id>.jpg with no folder; "train" finds it."""
    write_zip(images(tmp_path / "src"), data / "train.zip")
    said = []
    folder = archives.find_folder(data, "train", "train_images", scratch, said.append)
    assert sorted(p.name for p in folder.iterdir()) == ["a.jpg", "b.jpg"] and scratch in folder.parents
    assert said[0].startswith("unpack         train.zip: 2 entries")
    assert archives.find_folder(data, "train", "train_images", scratch, said.append) == folder
    assert len(said) == 1  # found again in the same process: said once
    archives._SAID.clear()  # as a later run's process
    assert archives.find_folder(data, "train", "train_images", scratch, said.append) == folder
    assert said[1] == f"unpack         reusing {folder} (train.zip)"


def test_a_zip_whose_files_sit_in_its_own_folder_gives_that_folder(tmp_path, data, scratch):
    write_zip(images(tmp_path / "src"), data / "train.zip", prefix="train")
    folder = archives.find_folder(data, "train", "train_images", scratch, print)
    assert folder.name == "train" and (folder / "a.jpg").is_file()


def test_a_folder_inside_an_archive_is_named_by_its_path_in_it(tmp_path, data, scratch):
    """TGS's train.zip holds images/ and masks/: "train/images" and "train/masks" find them, unpacked once."""
    images(tmp_path / "src" / "images")
    images(tmp_path / "src" / "masks", ("a.png", "b.png"))
    write_zip(tmp_path / "src", data / "train.zip")
    folder = archives.find_folder(data, "train/images", "train_images", scratch, print)
    masks = archives.find_folder(data, "train/masks", "train_masks", scratch, print)
    assert (folder / "a.jpg").is_file() and (masks / "a.png").is_file() and folder.parent == masks.parent
    with pytest.raises(KitError, match=r"^image folder 'train/labels' not found in .*: train.zip holds no folder 'labels'; "
                                       r"fix \[data\] train_masks in the config$"):
        archives.find_folder(data, "train/labels", "train_masks", scratch, print)


def test_a_folder_beside_its_zip_is_read_as_it_is(tmp_path, data, scratch):
    """dogs-vs-cats keeps both: nothing is unpacked."""
    images(data / "train")
    write_zip(data / "train", data / "train.zip")
    assert archives.find_folder(data, "train", "train_images", scratch) == data / "train"
    assert not scratch.exists()


def test_plain_tars_named_tar_gz_and_compressed_tgz_both_unpack(tmp_path, data, scratch):
    """inaturalist's .tar.gz files are plain tars; its members keep their sub-folders."""
    write_tar(images(tmp_path / "src" / "Plants" / "400"), data / "train_val2019.tar.gz", prefix="Plants/400", compress=False)
    with pytest.raises(tarfile.ReadError):
        tarfile.open(data / "train_val2019.tar.gz", "r:gz")
    folder = archives.find_folder(data, "train_val2019", "train_images", scratch)
    assert (folder / "Plants" / "400" / "a.jpg").is_file()
    write_tar(images(tmp_path / "t"), data / "test.tgz")
    assert (archives.find_folder(data, "test", "test_images", scratch) / "b.jpg").is_file()


@pytest.mark.parametrize("name, archive, member", [
    ("train.csv", "train.csv.zip", "train.csv"),  # invasive-species' labels, named as the file inside
    ("train.csv.zip", "train.csv.zip", "train.csv"),  # or as the archive
    ("train.tsv", "train.tsv.zip", "train.tsv"),  # movie-review
    ("train.json", "train.zip", "train.json"),  # random-acts-of-pizza's zip of one JSON file, named by its stem
])
def test_a_table_is_found_inside_its_archive(tmp_path, data, scratch, name, archive, member):
    (tmp_path / member).write_text("id\tlabel\n1\ta\n" if member.endswith(".tsv") else "id,label\n1,a\n")
    write_zip(tmp_path / member, data / archive)
    path = archives.find_file(data, name, "training table", scratch)
    assert path.name == member and scratch in path.parents


def test_a_zip_of_images_named_as_a_missing_table_is_not_unpacked(tmp_path, data, scratch):
    """dogs-vs-cats' train.zip holds images: looking for a train.json that is not there unpacks nothing."""
    write_zip(images(tmp_path / "src"), data / "train.zip")
    with pytest.raises(KitError, match=r"^training table 'train.json' not found in .* \(nor in train.zip\); it holds: "
                                       r"train.zip; check \[data\]"):
        archives.find_file(data, "train.json", "training table", scratch)
    assert not scratch.exists()


def test_a_plain_table_wins_over_its_archive(tmp_path, data, scratch):
    (data / "train.json").write_text("[]")
    write_zip(data / "train.json", data / "train.zip")
    assert archives.find_file(data, "train.json", "training table", scratch) == data / "train.json"


def test_a_half_unpacked_folder_is_never_reused(tmp_path, data, scratch, monkeypatch):
    write_zip(images(tmp_path / "src"), data / "train.zip")

    def dies(self, folder):
        (folder / "a.jpg").write_bytes(b"half")
        raise OSError(5, "I/O error")

    monkeypatch.setattr(archives._Zip, "extract", dies)
    with pytest.raises(OSError):
        archives.find_folder(data, "train", "train_images", scratch)
    assert list(scratch.iterdir()) == []  # the partial folder went with the failure
    monkeypatch.undo()
    key_folder = archives.unpack(data / "train.zip", scratch, print)
    shutil.rmtree(key_folder)
    abandoned = scratch / f".{key_folder.name}.999999999.x"  # a killed process's partial folder (its pid is gone)
    images(abandoned, ["a.jpg"])
    folder = archives.find_folder(data, "train", "train_images", scratch)
    assert folder == key_folder and (folder / "b.jpg").is_file() and not abandoned.exists()


def test_another_archive_at_the_same_name_unpacks_afresh(tmp_path, data, scratch):
    write_zip(images(tmp_path / "one", ["a.jpg"]), data / "train.zip")
    first = archives.find_folder(data, "train", "train_images", scratch)
    write_zip(images(tmp_path / "two", ["z.jpg"]), data / "train.zip")
    os.utime(data / "train.zip", ns=(1, 1))
    second = archives.find_folder(data, "train", "train_images", scratch)
    assert second != first and [p.name for p in second.iterdir()] == ["z.jpg"]


def test_bad_archives_are_one_line(tmp_path, data, scratch, monkeypatch):
    (data / "train.zip").write_bytes(b"not a zip at all")
    with pytest.raises(KitError, match=r"^train.zip: not a zip archive \(File is not a zip file\); replace the file"):
        archives.find_folder(data, "train", "train_images", scratch)
    (data / "test.tar.gz").write_bytes(b"\x1f\x8b garbage")
    with pytest.raises(KitError, match=r"^test.tar.gz: not a tar archive"):
        archives.find_folder(data, "test", "test_images", scratch)
    with pytest.raises(KitError, match=r"^image folder 'valid' not found in .* \(neither a folder nor an archive of it "
                                       r"\(valid.zip, ...\)\); fix \[data\] train_images"):
        archives.find_folder(data, "valid", "train_images", scratch)
    with pytest.raises(KitError, match=r"^training table 'labels.csv' not found in .* or an archive of it"):
        archives.find_file(data, "labels.csv", "training table", scratch)
    write_zip(images(tmp_path / "two"), data / "pair.csv.zip")
    with pytest.raises(KitError, match=r"^pair.csv.zip: holds no single pair.csv \(it holds: a.jpg, b.jpg\)"):
        archives.find_file(data, "pair.csv", "training table", scratch)


def test_members_that_escape_the_folder_are_refused(data, scratch):
    with zipfile.ZipFile(data / "train.zip", "w") as z:
        z.writestr("ok.jpg", b"1")
        z.writestr("../../evil.sh", b"rm -rf")
    with pytest.raises(KitError, match=r"^train.zip: member '../../evil.sh' would be written outside the folder it unpacks to"):
        archives.find_folder(data, "train", "train_images", scratch)
    with tarfile.open(data / "test.tar", "w") as t:
        info = tarfile.TarInfo("/etc/evil")
        info.size = 1
        t.addfile(info, io.BytesIO(b"1"))
    with pytest.raises(KitError, match=r"^test.tar: member '/etc/evil' would be written outside"):
        archives.find_folder(data, "test", "test_images", scratch)
    assert not (scratch.parent / "evil.sh").exists()


def test_the_disk_is_checked_before_unpacking(tmp_path, data, scratch, monkeypatch):
    write_zip(images(tmp_path / "src"), data / "train.zip")
    monkeypatch.setattr(archives.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**12, 10**12 - 20, 20))
    with pytest.raises(KitError, match=r"^train.zip: not unpacked, it needs 0.0 GB and .* has 0.0 GB free \(kit keeps a "
                                       r"tenth of it free\); free space there"):
        archives.find_folder(data, "train", "train_images", scratch)


def test_a_small_archive_unpacks_on_a_large_disk_that_is_mostly_full(tmp_path, data, scratch, monkeypatch):
    """A 1 TB disk with 10 GB free (CI's machines, a shared scratch disk) has room for a few kilobytes: what is
    kept free is a share of the free space, not of the disk's size."""
    write_zip(images(tmp_path / "src"), data / "train.zip")
    monkeypatch.setattr(archives.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**12, 10**12 - 10**10, 10**10))
    folder = archives.find_folder(data, "train", "train_images", scratch)
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in (tmp_path / "src").iterdir())


SEVEN_ZIP_TOOLS = ["7z", "py7zr", "libarchive"]


def force_tool(monkeypatch, tool):
    if tool == "7z" and not shutil.which("7z"):
        pytest.skip("no 7z command here")
    if tool != "7z" and not archives._importable(tool):
        pytest.skip(f"no {tool} here")
    monkeypatch.setattr(archives.shutil, "which", lambda name: shutil.os.path.join("/usr/bin", name) if tool == "7z" else None)
    monkeypatch.setattr(archives, "_importable", lambda name: name == tool)


@pytest.mark.parametrize("tool", SEVEN_ZIP_TOOLS)
def test_7z_archives_unpack_with_whichever_tool_is_there(tmp_path, data, scratch, monkeypatch, tool):
    """statoil's train.json.7z holds train.json at its root; the folder archive holds images in a folder."""
    if not (archives._importable("py7zr") or shutil.which("7z")):
        pytest.skip("nothing here writes the 7z fixtures (py7zr or the 7z command)")
    (tmp_path / "train.json").write_text('[{"id": "a", "is_iceberg": 1}, {"id": "b", "is_iceberg": 0}]')
    write_7z(tmp_path / "train.json", data / "train.json.7z")
    write_7z(images(tmp_path / "src"), data / "test.7z", prefix="test")
    force_tool(monkeypatch, tool)
    table = tables.read_table(archives.find_file(data, "train.json", "training table", scratch), "id")
    assert table.to_dict("list") == {"id": ["a", "b"], "is_iceberg": [1, 0]}
    folder = archives.find_folder(data, "test", "test_images", scratch)
    assert folder.name == "test" and sorted(p.name for p in folder.iterdir()) == ["a.jpg", "b.jpg"]
    (data / "bad.7z").write_bytes(b"7z? no")
    with pytest.raises(KitError, match=r"^bad.7z: (not a 7z archive|the 7z command cannot read it as a 7z archive)"):
        archives.find_folder(data, "bad", "train_images", scratch)


def test_a_7z_without_a_tool_to_read_it_is_one_line(tmp_path, data, scratch, monkeypatch):
    (data / "train.7z").write_bytes(b"7z\xbc\xaf\x27\x1c")
    monkeypatch.setattr(archives.shutil, "which", lambda name: None)
    monkeypatch.setattr(archives, "_importable", lambda name: False)
    with pytest.raises(KitError, match=r"^train.7z: nothing here unpacks .7z \(the 7z command, py7zr or libarchive-c\); "
                                       r"install p7zip-full \(apt\) or py7zr \(pip\)"):
        archives.find_folder(data, "train", "train_images", scratch)


def test_an_archive_holding_no_files_says_so(tmp_path, data, scratch):
    """invasive-species' 7z files in MLE-bench hold one empty folder entry and none of the images."""
    py7zr = pytest.importorskip("py7zr")
    (tmp_path / "home" / "public" / "train").mkdir(parents=True)
    with py7zr.SevenZipFile(data / "train.7z", "w") as z:
        z.write(tmp_path / "home" / "public" / "train", "home/public/train")
    with pytest.raises(KitError, match=r"^train.7z holds no files \(only empty folders, or nothing\): its images are not "
                                       r"in it"):
        archives.find_folder(data, "train", "train_images", scratch)


def bytes_read() -> int:
    """What this process has read so far (Linux's /proc/self/io rchar: every read call, cached or not)."""
    line = next(line for line in open("/proc/self/io") if line.startswith("rchar:"))
    return int(line.split()[1])


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="reads are counted by Linux's /proc/self/io")
@pytest.mark.parametrize("name, compress", [("train.tar.gz", True), ("train_val2019.tar.gz", False)])
def test_a_tar_is_read_once_to_unpack_it(tmp_path, data, scratch, name, compress):
    """A .tar.gz has no index: listing it, then unpacking it, decompressed it twice (inaturalist's 82 GB, twice).
    One streaming pass checks each member as it comes and writes it."""
    source = tmp_path / "src"
    source.mkdir()
    for k in range(4):  # incompressible: the archive is about as large as what it holds
        (source / f"{k}.jpg").write_bytes(os.urandom(2**20))
    write_tar(source, data / name, prefix="train", compress=compress)
    before = bytes_read()
    folder = archives.unpack(data / name, scratch, print)
    read = bytes_read() - before
    assert sorted(p.name for p in (folder / "train").iterdir()) == ["0.jpg", "1.jpg", "2.jpg", "3.jpg"]
    size = (data / name).stat().st_size
    assert size <= read < 1.5 * size, f"read {read / size:.2f} times the archive's {size} bytes"


def test_a_tar_too_large_for_the_disk_stops_as_it_comes(tmp_path, data, scratch, monkeypatch):
    write_tar(images(tmp_path / "src"), data / "test.tar.gz")
    monkeypatch.setattr(archives.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**12, 10**12 - 20, 20))
    with pytest.raises(KitError, match=r"^test.tar.gz: not unpacked, it needs 0.0 GB and .* has 0.0 GB free"):
        archives.find_folder(data, "test", "test_images", scratch)
    assert list(scratch.iterdir()) == []  # nothing half-unpacked is left


def mac_zip(path, folder, names):
    """A zip as macOS's Archive Utility makes it: the files in `folder`, and beside them __MACOSX/<folder>/._<name>
    resource forks (an image's extension, not an image) and a .DS_Store."""
    with zipfile.ZipFile(path, "w") as z:
        for name in names:
            z.writestr(f"{folder}/{name}", name.encode() * 10)
            z.writestr(f"__MACOSX/{folder}/._{name}", b"\x00\x05\x16\x07 AppleDouble")
        z.writestr(f"{folder}/.DS_Store", b"\x00\x00\x00\x01Bud1")
        z.writestr(f"__MACOSX/._{folder}", b"\x00\x05\x16\x07")
    return path


def test_a_zip_made_on_macos_gives_its_folder_without_the_resource_forks(data, scratch):
    said = []
    mac_zip(data / "train.zip", "train", ["a.jpg", "b.jpg"])
    folder = archives.find_folder(data, "train", "train_images", scratch, said.append)
    assert folder.name == "train" and sorted(p.name for p in folder.iterdir()) == ["a.jpg", "b.jpg"]
    assert not (folder.parent / "__MACOSX").exists()
    assert said[0].startswith("unpack         train.zip: 2 entries")  # the images, the folder's entry aside
    assert archives.members(data / "train.zip") == ["train/a.jpg", "train/b.jpg"]


def test_a_tar_made_on_macos_unpacks_without_its_appledouble_files(tmp_path, data, scratch):
    """macOS's tar stores ._<name> beside each file (copyfile's metadata): they are no images."""
    with tarfile.open(data / "test.tar.gz", "w:gz") as t:
        for name in ("._a.jpg", "a.jpg", "._b.jpg", "b.jpg"):
            info = tarfile.TarInfo(name)
            info.size = 3
            t.addfile(info, io.BytesIO(b"jpg"))
    folder = archives.find_folder(data, "test", "test_images", scratch)
    assert sorted(p.name for p in folder.iterdir()) == ["a.jpg", "b.jpg"]


def test_tables_read_as_their_extension_says(tmp_path):
    (tmp_path / "train.tsv").write_text('PhraseId\tPhrase\tSentiment\n1\tA series of "escapades"\t1\n2\tNA\t2\n')
    table = tables.read_table(tmp_path / "train.tsv", "PhraseId")
    assert table["Phrase"][0] == 'A series of "escapades"' and table["PhraseId"].tolist() == ["1", "2"]
    (tmp_path / "columns.json").write_text('{"id": {"0": 7, "1": 8}, "y": {"0": 0.5, "1": 1.5}}')
    assert tables.read_table(tmp_path / "columns.json", "id").to_dict("list") == {"id": ["7", "8"], "y": [0.5, 1.5]}
    (tmp_path / "lines.json").write_text('{"id": "id_1", "reactivity": [0.1, 0.2]}\n{"id": "id_2", "reactivity": [0.3]}\n')
    lines = tables.read_table(tmp_path / "lines.json", "id")  # stanford-covid's train.json: JSON lines
    assert lines["id"].tolist() == ["id_1", "id_2"] and lines["reactivity"][1] == [0.3]
    shutil.copy(tmp_path / "lines.json", tmp_path / "lines.jsonl")
    assert tables.read_table(tmp_path / "lines.jsonl", "id").equals(lines)
    pd.DataFrame({"a": [1]}).to_csv(tmp_path / "plain.csv", index=False)
    assert tables.read_table(tmp_path / "plain.csv").to_dict("list") == {"a": [1]}


@pytest.mark.parametrize("text, message", [
    ('[{"id": 1}, 2]', r"^t.json: item 1 is not a record \(int\)"),
    ('{"id": [1, 2], "y": [1]}', r"^t.json: column 'y' has 1 values and others 2"),
    ('{"images": [{"id": 1}], "annotations": []}', r'^t.json: a COCO-style label file .*set layout = "coco"'),
    ('{"id": 1,', r"^t.json: not JSON \(Expecting property name enclosed in double quotes at line 1, column 10\)"),
    ('{"id": 1}\n{"id": 2,\n', r"^t.json, line 2: not a JSON record"),
    ("[]", r"t.json: no rows"),
])
def test_bad_json_tables_are_one_line(tmp_path, text, message):
    (tmp_path / "t.json").write_text(text)
    with pytest.raises(KitError, match=message):
        tables.read_table(tmp_path / "t.json", "id")
