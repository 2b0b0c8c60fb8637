"""A batch's results as one small archive, and back into ``results/``.

A GPU allocation on a machine that keeps nothing returns what its batch finished as one ``.tar.gz`` of the
run folders' small files (``result.json``, ``metrics.jsonl``, ``config.json``, ``command.txt``, a post-step's
JSON; never a checkpoint), members named ``GROUP/RUN/FILE`` as under ``results/``. :class:`BatchArchive`
rewrites it each time a run is stored, so a batch stopped at any moment leaves an archive of every run it
finished. ``python -m mlm unpack PATH.tar.gz`` (:func:`unpack`) puts it into ``results/``, refusing a member
whose path would leave ``results/``, anything but a plain file of a known name, and, without ``--replace``, a
stored result that differs; it checks the whole archive before it writes anything.
"""

from __future__ import annotations

import json
import os
import tarfile
import threading
from pathlib import Path, PurePosixPath
from typing import Sequence

from mlm.utils import atomic_write_bytes, is_smoke_result

MAX_MEMBER_BYTES = 64 * 2**20  # no file of a run folder's results comes near this


class ArchiveError(ValueError):
    """An archive that cannot be unpacked as it is: nothing was written."""


class BatchArchive:
    """The archive at ``path`` of the run folders of ``results`` added so far, rewritten atomically by each
    :meth:`add` (from any of the batch's threads); an empty archive from the start."""

    def __init__(self, path: Path, results: Path):
        self.path, self.results = Path(path), Path(results)
        self.folders: list[tuple[str, tuple[str, ...]]] = []
        self._lock = threading.Lock()
        self._write()

    def add(self, folder: str, names: Sequence[str]) -> None:
        """Add ``results/folder``'s files ``names`` (those that exist) and rewrite the archive; a folder already
        in it is not added twice."""
        with self._lock:
            if folder not in {f for f, _ in self.folders}:
                self.folders.append((folder, tuple(names)))
                self._write()

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        with tarfile.open(tmp, "w:gz") as tar:
            for folder, names in self.folders:
                for name in names:
                    if (self.results / folder / name).is_file():
                        tar.add(self.results / folder / name, arcname=f"{folder}/{name}", recursive=False)
        os.replace(tmp, self.path)


def _json_or_none(data: bytes):
    try:
        return json.loads(data)
    except ValueError:
        return None


def _members(path: Path, allowed: set[str]) -> dict[str, bytes]:
    """``GROUP/RUN/FILE`` -> contents of every file of the archive, or an :class:`ArchiveError` saying which
    member is refused and why."""
    try:
        tar = tarfile.open(path, "r:*")
    except (OSError, tarfile.TarError) as err:
        raise ArchiveError(f"cannot read {path} as a tar archive: {err}") from err
    files = {}
    with tar:
        for member in tar.getmembers():
            name = PurePosixPath(member.name)
            if member.isdir():
                continue
            if not member.isfile():
                raise ArchiveError(f"{path}: {member.name} is not a plain file (a link or a device); refused")
            if name.is_absolute() or ".." in name.parts or len(name.parts) < 3 or "\\" in member.name:
                raise ArchiveError(f"{path}: {member.name} is not a path GROUP/RUN/FILE inside results/; refused")
            if name.name not in allowed:
                raise ArchiveError(f"{path}: {member.name} is not a results file ({', '.join(sorted(allowed))})")
            if member.size > MAX_MEMBER_BYTES:
                raise ArchiveError(f"{path}: {member.name} is {member.size:,} bytes, too large for a results file")
            files[str(name)] = tar.extractfile(member).read()
            if name.name == "result.json" and is_smoke_result(_json_or_none(files[str(name)])):
                raise ArchiveError(f"{path}: {member.name} is a smoke run's (python -m mlm book --smoke), whose "
                                   "numbers mean nothing; refused")
    return files


def unpack(path: str | Path, results: str | Path, allowed: set[str], replace: bool = False) -> list[str]:
    """Write the run folders of archive ``path`` into ``results``; returns what was done, a line per run folder
    (added, replaced, unchanged). Every member is checked first (:func:`_members`), every run folder must hold
    a ``result.json``, and a stored file that differs is refused unless ``replace``: then nothing is written.
    Each folder's ``result.json`` is written last, each file atomically."""
    path, results = Path(path), Path(results)
    files = _members(path, allowed)
    root = results.resolve()
    for name in files:
        if not (results / name).resolve().is_relative_to(root):  # a link inside results/ pointing out of it
            raise ArchiveError(f"{path}: {name} would be written outside {results}; refused")
    folders: dict[str, dict[str, bytes]] = {}
    for name, data in files.items():
        folder, file = name.rsplit("/", 1)
        folders.setdefault(folder, {})[file] = data
    missing = sorted(f for f, names in folders.items() if "result.json" not in names)
    if missing:
        raise ArchiveError(f"{path}: {', '.join(missing)} holds no result.json (not a finished run); nothing written")
    changed = {folder: [f for f, data in names.items() if (results / folder / f).is_file()
                        and (results / folder / f).read_bytes() != data]
               for folder, names in folders.items()}
    conflicts = sorted(f"{folder}/{f}" for folder, names in changed.items() for f in names)
    if conflicts and not replace:
        raise ArchiveError(f"{path} differs from the stored {', '.join(conflicts)}; nothing written. Give --replace "
                           "to replace the stored results with the archive's")
    report = []
    for folder, names in sorted(folders.items()):
        new = not (results / folder / "result.json").is_file()
        if not new and not changed[folder] and all((results / folder / f).is_file() for f in names):
            report.append(f"unchanged {folder}")
            continue
        for file in sorted(names, key=lambda f: f == "result.json"):
            atomic_write_bytes(results / folder / file, names[file])
        report.append(f"{'added' if new else 'replaced' if changed[folder] else 'completed'} {folder} "
                      f"({len(names)} files)")
    return report

