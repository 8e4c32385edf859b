"""Competition files that come archived (.zip, .tar, .tar.gz/.tgz, .7z), unpacked once into scratch space.

One config serves both shapes a competition's data comes in: `train_images = "train"` finds train/ or
train.zip (or .tar, .tar.gz, .tgz, .7z), `train = "train.csv"` finds train.csv or train.csv.zip (or
train.zip holding train.csv). /kaggle/input is read-only, so an archive unpacks under /kaggle/temp where it
exists (Kaggle's scratch disk, not saved with the output), else under the kit cache folder; into a folder
named by the archive's identity (path, size, time), renamed into place only once whole, so a run that was
killed half-way never leaves a folder the next run would take for complete. The next run reuses it.

.7z has no reader in the standard library: the `7z` command (Kaggle's image has it), else py7zr, else
libarchive-c, whichever is there first; none of them is one line saying what to install.

What macOS adds to an archive it makes (the __MACOSX/ folder of resource forks, AppleDouble ._<name> files,
.DS_Store) is no part of the data: it is left out of every listing and removed once unpacked (`junk`).
"""
from __future__ import annotations

import glob
import hashlib
import importlib.util
import os
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from kit.errors import KitError
from kit.runtime.paths import disk_refusal

SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".7z")  # longest first: "x.tar.gz" is a .tar.gz, not a .gz
KAGGLE_TEMP = Path("/kaggle/temp")
UNPACK_FORMAT = 2  # bump when what an unpacked folder holds changes, so older ones are not reused (2: no macOS junk)
MACOS_FOLDER = "__MACOSX"  # where macOS's Archive Utility puts each file's resource fork, as ._<name>
_SAID: set[Path] = set()  # unpacked folders this process has named in its log


def scratch_dir() -> Path:
    """Where archives unpack: /kaggle/temp on Kaggle, else the kit cache folder (KIT_CACHE_DIR)."""
    if KAGGLE_TEMP.is_dir() and os.access(KAGGLE_TEMP, os.W_OK):
        return KAGGLE_TEMP / "kit-unpacked"
    return Path(os.environ.get("KIT_CACHE_DIR") or Path(tempfile.gettempdir()) / "kit-cache") / "unpacked"


def archive_suffix(name: str) -> str:
    """The archive suffix `name` ends with ("" for none), in lower case."""
    lower = name.lower()
    return next((s for s in SUFFIXES if lower.endswith(s) and len(lower) > len(s)), "")


def junk(name: str) -> bool:
    """Whether a path (an archive member's, or a file's under the data) is what macOS adds beside the files: in
    __MACOSX/, an AppleDouble ._<name> file, or .DS_Store."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    return bool(parts) and (MACOS_FOLDER in parts or parts[-1].startswith("._") or parts[-1] == ".DS_Store")


def locate(data_dir: Path, name: str) -> Path | None:
    """What serves [data] `name` in `data_dir`: the file or folder itself, else the first archive of it
    present (`name` + a suffix, or for a file name its stem + a suffix: train.zip holding train.json)."""
    path = data_dir / name
    if not name or path.exists():
        return path
    stem = PurePosixPath(name).with_suffix("").as_posix() if PurePosixPath(name).suffix else ""
    for base in (name, stem):
        for suffix in SUFFIXES if base else ():
            candidate = data_dir / f"{base}{suffix}"
            if candidate.is_file():
                return candidate
    return None


def find_file(data_dir: Path, name: str, what: str, scratch: Path | None = None, log: Callable[[str], None] = print) -> Path:
    """The file [data] `name` names: itself, or the member of that name unpacked from its archive."""
    found = locate(data_dir, name)
    if found is None or found.is_dir():
        present = ", ".join(sorted(p.name for p in data_dir.iterdir())[:12]) if data_dir.is_dir() else "nothing"
        tried = f" or an archive of it ({name}.zip, ...)" if found is None else " (a folder)"
        raise KitError(f"{what} '{name}' not found in {data_dir}{tried}; it holds: {present}; check [data] in the config")
    if not archive_suffix(found.name):
        return found
    member = PurePosixPath(name).name  # the table inside: train.csv, from train.csv.zip named either way
    member = member[: -len(archive_suffix(member))] if archive_suffix(member) else member
    if not found.name.startswith(member):  # train.zip for train.json: only if it holds one (not a zip of images)
        names, _ = _reader(found).listing()
        if not any(PurePosixPath(n).name == member for n in names):
            present = ", ".join(sorted(p.name for p in data_dir.iterdir())[:12])
            raise KitError(f"{what} '{name}' not found in {data_dir} (nor in {found.name}); it holds: {present}; check "
                           "[data] in the config")
    folder = unpack(found, scratch or scratch_dir(), log)
    files = [p for p in sorted(folder.rglob("*")) if p.is_file()]
    named = [p for p in files if p.name == member]
    if len(named) == 1 or len(files) == 1:
        return (named or files)[0]
    held = ", ".join(p.relative_to(folder).as_posix() for p in files[:6]) or "no files"
    raise KitError(f"{found.name}: holds no single {member} (it holds: {held}); fix [data] or attach the file unpacked")


def find_folder(data_dir: Path, name: str, key: str, scratch: Path | None = None, log: Callable[[str], None] = print) -> Path:
    """The folder [data] `key` names: itself, or its archive unpacked (train.zip for "train"); an archive
    whose files sit in one folder named as the archive (train.zip holding train/...) gives that folder. A folder
    inside an archive is named by its path in it: "train/images" in train.zip (TGS's images/ and masks/)."""
    found = locate(data_dir, name)
    if found is not None and found.is_dir():
        return found
    head, _, rest = name.partition("/")
    archive = locate(data_dir, head) if found is None and rest else None
    if archive is not None and not archive.is_dir():
        inside = find_folder(data_dir, head, key, scratch, log) / rest
        if inside.is_dir():
            return inside
        raise KitError(f"image folder '{name}' not found in {data_dir}: {archive.name} holds no folder '{rest}'; fix "
                       f"[data] {key} in the config")
    if found is None or not archive_suffix(found.name):
        what = "a file, not a folder" if found is not None else f"neither a folder nor an archive of it ({name}.zip, ...)"
        raise KitError(f"image folder '{name}' not found in {data_dir} ({what}); fix [data] {key} in the config")
    folder = unpack(found, scratch or scratch_dir(), log)
    entries = [e for e in folder.iterdir() if not e.name.startswith(".")]
    stem = found.name[: -len(archive_suffix(found.name))]
    if len(entries) == 1 and entries[0].is_dir() and entries[0].name.lower() == stem.lower():
        folder = entries[0]
    if not any(p.is_file() for p in folder.rglob("*")):
        raise KitError(f"{found.name} holds no files (only empty folders, or nothing): its images are not in it; "
                       f"attach the competition's data with its images, or fix [data] {key}")
    return folder


def members(archive: Path) -> list[str]:
    """The names of what `archive` holds (files and folders, macOS's junk left out), read from its index without
    unpacking it."""
    return [n for n in _reader(archive).listing()[0] if not junk(n)]


def unpack(archive: Path, scratch: Path, log: Callable[[str], None] = print) -> Path:
    """The folder `archive` unpacks to under `scratch`: reused when this archive was unpacked before, else
    unpacked now, after checking the disk has room, into a temporary folder renamed into place when whole."""
    stat = archive.stat()
    key = hashlib.sha256(f"{UNPACK_FORMAT}|{archive.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    target = scratch / f"{archive.name}-{key}"
    if target.is_dir():
        if target not in _SAID:  # once a process: a run finds the same folder more than once
            log(f"unpack         reusing {target} ({archive.name})")
            _SAID.add(target)
        return target
    scratch.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(scratch, target.name)
    reader = _reader(archive)
    free = shutil.disk_usage(scratch).free  # before anything is written

    def check(names: list[str], size: int) -> None:
        """Members that would land outside the folder, and bytes beyond the disk's room, refused in one line."""
        for member in names:
            parts = PurePosixPath(member.replace("\\", "/")).parts
            if member.startswith(("/", "\\")) or ".." in parts or (parts and parts[0].endswith(":")):
                raise KitError(f"{archive.name}: member '{member}' would be written outside the folder it unpacks to; "
                               "kit does not unpack such an archive (unpack it yourself and attach the folder)")
        refusal = disk_refusal(size, scratch, free)
        if refusal:
            raise KitError(f"{archive.name}: not unpacked, {refusal}; free space there (or set KIT_CACHE_DIR to a larger "
                           "disk), or attach the data unpacked")

    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}.", dir=scratch))
    try:
        names, size = reader.unpack(partial, check)
        _remove_junk(partial)
        try:
            os.rename(partial, target)
        except OSError:
            if not target.is_dir():  # else another process unpacked the same archive first: use its folder
                raise
    except OSError as e:
        if e.errno == 28:  # ENOSPC: the sizes an archive declares can be short of what it writes
            raise KitError(f"{archive.name}: the disk under {scratch} filled up while unpacking; free space there, or "
                           "set KIT_CACHE_DIR to a larger disk") from None
        raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    kept = [n for n in names if not junk(n)]
    log(f"unpack         {archive.name}: {len(kept)} entries, {size / 2**20:.0f} MB, into {target}")
    _SAID.add(target)
    return target


def _remove_junk(folder: Path) -> None:
    """What macOS added to an archive (`junk`), gone from the folder it unpacked to."""
    for top, dirs, files in os.walk(folder):
        for name in [d for d in dirs if d == MACOS_FOLDER]:
            shutil.rmtree(Path(top, name))
            dirs.remove(name)
        for name in files:
            if junk(name):
                Path(top, name).unlink()


def _remove_abandoned(scratch: Path, name: str) -> None:
    """Partial folders of this archive left by processes that died unpacking it (their pid is gone)."""
    for partial in scratch.glob(f".{glob.escape(name)}.*"):
        pid = partial.name[len(name) + 2 :].split(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(partial, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Indexed:
    """An archive with an index (zip, 7z): listed from it, every member checked, then unpacked."""

    def unpack(self, folder: Path, check: Callable[[list[str], int], None]) -> tuple[list[str], int]:
        names, size = self.listing()
        check(names, size)
        self.extract(folder)
        return names, size


class _Zip(_Indexed):
    def __init__(self, path: Path):
        self.path = path
        try:
            with zipfile.ZipFile(path) as z:
                self.infos = z.infolist()
        except (zipfile.BadZipFile, OSError) as e:
            raise KitError(f"{path.name}: not a zip archive ({e}); replace the file or fix [data]") from None

    def listing(self) -> tuple[list[str], int]:
        return [i.filename for i in self.infos], sum(i.file_size for i in self.infos)

    def extract(self, folder: Path) -> None:
        with zipfile.ZipFile(self.path) as z:
            z.extractall(folder)


class _Tar:
    """A tar, plain or compressed whatever its name says (some ".tar.gz" files are plain tars), read as a stream:
    it has no index, and a compressed one is decompressed from its start at every pass, so unpacking it is one
    pass that checks each member as it comes (and listing it, another)."""

    def __init__(self, path: Path):
        self.path = path

    def listing(self) -> tuple[list[str], int]:
        names, size = [], 0
        with self._stream() as members:
            for _, member in members:
                names.append(member.name)
                size += member.size if member.isfile() else 0
        return names, size

    def unpack(self, folder: Path, check: Callable[[list[str], int], None]) -> tuple[list[str], int]:
        names, size = [], 0
        with self._stream() as members:
            for t, member in members:
                names.append(member.name)
                size += member.size if member.isfile() else 0
                check([member.name], size)
                if junk(member.name):
                    continue
                if not hasattr(tarfile, "data_filter"):  # before Python 3.11.4: no filter, so no links at all
                    if member.issym() or member.islnk():
                        raise KitError(f"{self.path.name}: member '{member.name}' is a link; kit does not unpack such an "
                                       "archive")
                    t.extract(member, folder)
                    continue
                try:  # the "data" filter refuses links out of the folder and device files
                    t.extract(member, folder, filter="data")
                except tarfile.FilterError as e:
                    raise KitError(f"{self.path.name}: {e}; kit does not unpack such an archive") from None
        return names, size

    @contextmanager
    def _stream(self) -> Iterator[Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]]:
        """(the tar, a member) as they come; what does not read as a tar is one line."""
        try:
            with tarfile.open(self.path, "r|*") as t:
                yield ((t, member) for member in t)
        except (tarfile.ReadError, tarfile.CompressionError, EOFError, zlib.error) as e:
            raise KitError(f"{self.path.name}: not a tar archive ({e}); replace the file or fix [data]") from None


class _SevenZip(_Indexed):
    """The `7z` command, else py7zr, else libarchive-c."""

    def __init__(self, path: Path):
        self.path = path
        self.tool = "7z" if shutil.which("7z") else "py7zr" if _importable("py7zr") else \
            "libarchive" if _importable("libarchive") else ""
        if not self.tool:
            raise KitError(f"{path.name}: nothing here unpacks .7z (the 7z command, py7zr or libarchive-c); install p7zip-full "
                           "(apt) or py7zr (pip), or attach the data unpacked")

    def listing(self) -> tuple[list[str], int]:
        if self.tool == "7z":
            out = self._run(["7z", "l", "-slt", str(self.path)])  # no -ba: p7zip 16.02 (Kaggle's) may not know it
            names, size = [], 0
            _, _, entries = out.partition("\n----------\n")  # after the archive's own block, one block an entry
            for line in entries.splitlines():
                if line.startswith("Path = "):
                    names.append(line[len("Path = "):])
                elif line.startswith("Size = ") and line[len("Size = "):].strip().isdigit():
                    size += int(line[len("Size = "):])
            return names, size
        if self.tool == "py7zr":
            import py7zr  # optional: imported only where the 7z command is missing

            with self._open_py7zr(py7zr) as z:
                infos = z.list()
            return [i.filename for i in infos], sum(i.uncompressed or 0 for i in infos)
        import libarchive

        names, size = [], 0
        with self._open_libarchive(libarchive) as entries:
            for entry in entries:
                names.append(entry.pathname)
                size += entry.size or 0
        return names, size

    def extract(self, folder: Path) -> None:
        if self.tool == "7z":
            self._run(["7z", "x", "-y", f"-o{folder}", str(self.path)])
        elif self.tool == "py7zr":
            import py7zr

            with self._open_py7zr(py7zr) as z:
                z.extractall(path=folder)
        else:
            import libarchive

            with self._open_libarchive(libarchive) as entries:
                for entry in entries:
                    out = folder / entry.pathname
                    if entry.isdir:
                        out.mkdir(parents=True, exist_ok=True)
                    elif entry.isfile:
                        out.parent.mkdir(parents=True, exist_ok=True)
                        with open(out, "wb") as f:
                            for block in entry.get_blocks():
                                f.write(block)

    def _run(self, command: list[str]) -> str:
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            why = " ".join((done.stderr or done.stdout).split())[-200:]
            raise KitError(f"{self.path.name}: the 7z command cannot read it as a 7z archive ({why}); replace the file "
                           "or fix [data]")
        return done.stdout

    def _open_py7zr(self, py7zr):
        try:
            return py7zr.SevenZipFile(self.path, "r")
        except (py7zr.Bad7zFile, OSError, EOFError) as e:
            raise KitError(f"{self.path.name}: not a 7z archive ({e}); replace the file or fix [data]") from None

    @contextmanager
    def _open_libarchive(self, libarchive):
        try:
            with libarchive.file_reader(str(self.path)) as entries:
                yield entries
        except libarchive.ArchiveError as e:
            raise KitError(f"{self.path.name}: not a 7z archive ({e}); replace the file or fix [data]") from None


def _importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _reader(archive: Path):
    suffix = archive_suffix(archive.name)
    if suffix == ".zip":
        return _Zip(archive)
    if suffix == ".7z":
        return _SevenZip(archive)
    return _Tar(archive)
