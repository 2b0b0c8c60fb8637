"""The MSR Sentence Completion Challenge data (Tran et al. 2016, section 6): the Holmes training
novels and the 1,040 questions. (Scoring a model on the questions is :mod:`mlm.completion`.)

The challenge's training data are 522 Project Gutenberg novels of the 19th century, kept as
the raw ``.TXT`` files of the early 1990s, legal header included. The book uses a subset of 53
of them (every 10th file); they live in::

    $MLM_DATA_DIR/msr_sentence_completion/Holmes_Training_Data_subset/<NAME>.TXT[.gz]

and each one is checked against the sha256 of its uncompressed bytes (the same values as
the folder's ``MANIFEST.tsv``). Turning a novel into training sentences takes four steps:

1. :func:`strip_gutenberg` drops the license header (everything up to the
   ``*END*THE SMALL PRINT!`` line, or a newer ``*** START OF`` line) and the footer (the last
   ``End of (the) Project Gutenberg Etext ...`` line in the second half of the text, and what
   follows it);
2. :func:`split_sentences` joins the lines of each paragraph and cuts it after ``.``, ``!`` or
   ``?`` when the next word starts with a capital letter (not after ``Mr.``, ``Dr.`` or an
   initial); all-capital headings such as ``CHAPTER IV`` are dropped;
3. :func:`tokenize` lowercases and splits off punctuation the way the challenge's questions
   are written: ``,`` ``;`` ``:`` ``.`` ``!`` ``?`` become tokens of their own, apostrophes and
   hyphens stay inside words (``man's``, ``holmes'``, ``to-morrow``), titles keep their period
   (``mr.``), quotation marks, brackets, dashes and ``_italics_`` markers are removed;
4. every ``valid_every``-th sentence goes to the validation split (the paper holds out
   randomly chosen sentences; a fixed stride is the deterministic equivalent).

The questions (``testing_data.csv``, ``test_answer.csv``) are read by :func:`load_questions` into
:class:`Question` objects, checking the format line by line.

The test split holds the 1,040 challenge questions with the correct word filled in, tokenized
the same way, so ``test`` perplexity is measured on the very sentences the completion task
scores. The vocabulary is the ``vocab_size`` most frequent training words plus ``<pad>``,
``<eos>``, ``<unk>`` and ``<bos>``; other words are kept in ``Corpus.lines`` and map to
``<unk>`` when encoded. Parsing all 53 novels takes some seconds, so the tokenized sentences
of each novel are cached (atomically) in ``$MLM_CACHE_DIR`` or ``~/.cache/mlm/tokenized``.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from mlm.data.corpora import (Corpus, DataError, default_cache_dir, download_allowed, download_file, find_file,
                              read_bytes, resolve_data_dir, verify_file)
from mlm.data.vocab import BOS, EOS, PAD, UNK, Vocabulary
from mlm.utils import atomic_write_bytes

FOLDER = "msr_sentence_completion"  # inside the data directory
NOVELS_FOLDER = "Holmes_Training_Data_subset"  # inside FOLDER
ENV_CACHE_DIR = "MLM_CACHE_DIR"
TOKENIZER_VERSION = "2"  # change whenever the tokenized output changes (invalidates the cache)

# Where the files come from (see msr_sentence_completion/SOURCE.md of the shared data): the GitHub
# repository cmaclell/concept_formation at this commit holds all 522 novels and the questions.
SOURCE_REPO = "cmaclell/concept_formation"
SOURCE_COMMIT = "b9313a9b92bd7105d9e4ac284be79a174bdbbddd"
_RAW = f"https://raw.githubusercontent.com/{SOURCE_REPO}/{SOURCE_COMMIT}/concept_formation/data_files"
NOVELS_URL = f"{_RAW}/texts/Holmes_Training_Data"  # + "/<NAME>.TXT"
QUESTION_URLS = {"testing_data.csv": f"{_RAW}/MSC_testing_data.csv", "test_answer.csv": f"{_RAW}/MSC_test_answer.csv"}

# sha256 of the uncompressed files (the challenge questions, and the 53 novels of the subset:
# every 10th of the 522 in file-name order).
QUESTION_FILES = {
    "testing_data.csv": "d2c5ee9dfd823ad0c4f582631b8dc0b1f6777957e2ee0f2e7dbe7982d00b5763",
    "test_answer.csv": "da979e32df25f5db6d3817415d342e168a8b6c88206bf8412267f056fe1858ff",
}
_NOVELS_TABLE = """
04TOM10.TXT 582745d8cb64a4065c843f6cdbf3ada2342a60a38e511a2fa49979b013aacc69
12WOZ10.TXT d845256a5966c1dd7114b243873f342388990ef93e64de38f84eed747a249aed
1MLKD11.TXT fee236fce7745577c432cb3879f38c14fc213c7469f86e47580cf3ded99a51db
3BOAT10.TXT 3a9527812bf5599f090ab83dc289738083286a56f2a27af1b39f333f28b1737a
ADAMB10.TXT 1e3d595146cea3f2073f8571a8922f170d29b0e6a685d514123457a9ee17b320
ALAMO10.TXT 60b9eb82e63c448b06f53d5f14197eb7835774fb97b8812a07b60528f34ec8f7
ANNE11.TXT 928cf945a781fc639eac83ed8aaae8f68f38c2fbfcd6794717a81b58ffc250ab
AWAKN10.TXT eb9b347c6743d54c6f9264293ffad54bab9e65b63cd0550a94610e78133278a6
BCITY10.TXT 734b009ee51d3d955c3a582583d588b21b6d009ef02866fda4705c45891dda07
BLCKA10.TXT ceb247398b138dad9d8a0a8838b1cc2d20436f158f3cb484d1ebfa8f321d8e1e
CAROL11.TXT 2c9d6f3f968332faad63df8b9772edef5b87e32d8f9ff67328a8d19dc019c060
CLOTL11.TXT cca8a2f67833630883c2be4a307a7ed8aadbe2d3675e4142bd0a62573b723872
CURIO10.TXT 33a15f8e4294cc2befad6018ca1fcbd0bc0c2a401f1d53965824ef51e91b25e2
DPROF10.TXT bcaf5b6a25c6ecb983713f81e79f05bed978db2ab569af987af5b47ccc0975fd
DYNMT10.TXT 8f8b1ad1f72a281d516ff394540a5e71bc815c4ca3ea238c4959a4b2800d78d2
FBRLS10.TXT 1c7aa59c68489dd391aaa7a1b08b9f056cff73ea6abf30a653beacf5482c4d12
FRHNT10.TXT 8ac54074357a7a231516c3aeba59819fd5d3028571ce33fd2c6e10333b91a07a
GLTRV10.TXT 1c14b7e74a0dad0a1032ed14b2889036668564a394bad0254eedd9667d14a589
HARDT10.TXT 7f35fb51665807c9a1db08dd11dbef9c99e208a147dee5ad75f1ab2f13a179a9
HHOTL10.TXT dc63f4f1b27e6985cb9a4d5eebfc02255c98563d0e75fcc87f190d240596d904
HPPRT10.TXT 61731cf627024d480f8453d2567283be79c5a85254e5d8b22c9e43a1df824511
INFRB10.TXT 50af64a588883d164fb0440d0494017276db5284055bc8f74fe011ce109870fc
JPLAG10.TXT e90e35d9911c4c643f4fb8d532c2fa690b320a64981a50300cf9a48bc00a3914
KRSON10.TXT 4143ec34dfaf0bf0c1cb4cc6ccc9c3d8b35545192f3ea3e1752a27fbbd7f4ad8
LESCO10.TXT 07b6b7e8e1bd0f61651cc39d50dc4d2b8052da5e48fd5fcef6f897309441e1d3
LNDLR10.TXT 9ccdb70a970867ac4150b01deb410bf25e5566d10ab34b2296bba3499b836163
LVGRO10.TXT dcc2ee9eff990a09321ec67e1efda150f06c3e0fac8a0a0fa8c8444fe1490cdb
MARKT10.TXT b96c2487446488e9c8d0bf754b7b0d40f00e54d7b530cac35bb92e0c8e0f0590
MGEGG10.TXT c75c70ae0e3771f295e3cc85256f27bda75700f80a8bd60b13f658af32b566d3
MOON10.TXT 4bc48a4428bd2813726a8181d258bfa6f3bcedae77b5d44acb4fd0ff5b446bdd
MSTON10.TXT 73ef0b47c4466ca3b8835751a10982b75c294a15357c5686798d52e672f00e82
NOTUN11.TXT 18f016bcb1efbe6301eeeb1813b898632b06a14801dfeef30d750eb74cc46806
OTORN10.TXT 3f16a841c4ef9804c6ff6158a51484672c2e3bd20c51b4c846f7cd9b36a6812d
PCLP210.TXT 343fbf76af128f2b850f193eba7f8cab94a5b2cdb7768bab277200f5354712ae
PHCAR10.TXT 87adfb600b0bf1e42caaec71422a93ff392d0750292cd9a6e21bda2be03404e6
POLST10.TXT 2337c901683ae34fcf043e65496c8373e8531608890072a652cce4e92d1b98e9
PWPRS10.TXT 33bf08fe815a270ec94b3eff79408e0d6cb2708510f981bc2fa3bd0d4324a2a7
RHOLM11B.TXT 45f19fd948e1f37a2cabfa5219d8147a0ba1a0983078db7919a0861087b4c896
RTLST10.TXT 09568add1990a8d65499ea1e117e2364df8b43e36303a4d818f07dcab1f6ca5b
SBRUN10.TXT c0562645a00b9fd4cfbd284aee754e0c742a8dc50342d0cee31cd839cf687cb8
SILVS10.TXT 39236141a592539c8bd7b590498b51aefde5803f97bf905a2955d882bba232cc
SONSA11.TXT 5aad52ac618f7611fd3bf6679eef4762cc1ced40b305e1fa22bd759669051bf7
STUDY10.TXT 48e6915ff1322f524010a96f3f2e1e9d78814a8d709ccec0b674a4da1a7470b4
TBSCC10.TXT be8a0c0dad9d0d4b8e3730d7b8f44414da845bb405229dfa71b8a29bcc86073a
TDITW10.TXT 5b1b1f0fa33a3802b13abf116ca9af8d3d3958321b067eb5735b4ed0b934d73f
THEEU10.TXT 744a699404e25a67ef87a913f4cf5b8795a6b8fdff8b6aecaeb81086700f1cce
TNGLW10.TXT 8304ed40ec9ed30d748eb08ee6fa1aa1421344dfcdf3880810d7650f2daf97ef
TRED110.TXT 46383ebd5e8c436e09c05a3387c445452609acb5484fa5265c79cf8cd28f7edb
TTNIC10.TXT 4d11497c4558469607e4f3d60835fecc12001695e996b621bd9c1a6e06330ba9
VFAIR10.TXT f1ac9b82f4a468d092601c394e0afb137073bd849fae918fe0bab958ca682e76
WHRT210.TXT 3761ffae8f3b5a6432b31b940162c0864ccfb9707dea5b8d744077804e49b4a6
WTFNG10.TXT b3f0adbf4c9be47bca5a52d0324a46a4a8e8c956b6fc0f50ec64e609cd2c535c
YOUTH10.TXT 381a6f00c1fb96904bdc9440114445f95ae0a2289cec16f82391a6e43d0d74dc
"""
NOVELS: dict[str, str] = dict(line.split() for line in _NOVELS_TABLE.strip().splitlines())

DEFAULT_VOCAB_SIZE = 30_000  # most frequent training words kept (the paper's full data: ~64,000)
DEFAULT_VALID_EVERY = 50  # every 50th sentence is held out for validation (2%)


# -- 1. the Project Gutenberg header and footer ------------------------------------------------
_HEADER_END = re.compile(r"^\W*end\W*the small print|^\W*\*\*\*\s*start of (the|this) project gutenberg",
                         re.IGNORECASE)
_FOOTER_START = re.compile(r"^\W*(you have reached the )?end of (the )?(this )?project gutenberg"
                           r"|^\W*end of .*e-?text|^\W*the project gutenberg e-?text of", re.IGNORECASE)
_GUTENBERG_LINE = re.compile(r"project gutenberg|gutenberg e-?text", re.IGNORECASE)


def strip_gutenberg(text: str) -> str:
    """The body of a Project Gutenberg file, without its license header and footer.

    The header ends at the 1990s ``*END*THE SMALL PRINT! ...*END*`` line (or a newer
    ``*** START OF THE PROJECT GUTENBERG EBOOK`` line); a file with neither keeps its start.
    The footer starts at the last ``End of (The) Project Gutenberg Etext ...`` (or repeated
    ``The Project Gutenberg Etext of ...`` title) line in the second half of the body; a file
    without one keeps its end. Other lines that mention Project Gutenberg are dropped.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start = 0
    for i, line in enumerate(lines):
        if _HEADER_END.search(line):
            start = i + 1
            break
    body = lines[start:]
    half = len(body) // 2
    end = len(body)
    for i in range(len(body) - 1, half - 1, -1):
        if _FOOTER_START.search(body[i]):
            end = i
            break
    return "\n".join(line for line in body[:end] if not _GUTENBERG_LINE.search(line))


# -- 2. sentences ---------------------------------------------------------------------------
# Titles that keep their period (the questions write "Mr. Holmes", "Dr.", "St."); a sentence
# is never cut after them.
ABBREVIATIONS = frozenset("mr mrs dr st messrs mme mlle rev col capt gen lieut sgt prof hon esq jr sr".split())
# A sentence ends at . ! or ? (plus closing quotes or brackets) followed by space and an opening
# quote or a capital letter or digit.
_SENTENCE_END = re.compile(r"""[.!?]+["')\]_]*\s+(?=["'(\[_]*[A-Z0-9])""")
_LAST_WORD = re.compile(r"([A-Za-z]+)\.\W*$")


def _paragraphs(text: str) -> list[str]:
    """Blocks separated by blank lines, each joined into one line."""
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", text) if block.strip()]


def split_sentences(text: str) -> list[str]:
    """Raw sentences of ``text``: paragraphs cut after sentence-final punctuation.

    No sentence crosses a paragraph. A cut after ``Mr.``, ``Dr.``, ... or after a single
    capital letter other than ``I`` (an initial, ``J. Smith``) is undone. Headings without a lowercase letter
    (``CHAPTER IV``, ``THE WORKSHOP``) are dropped.
    """
    sentences = []
    for paragraph in _paragraphs(text):
        pieces, start = [], 0
        for match in _SENTENCE_END.finditer(paragraph):
            piece = paragraph[start:match.end()].strip()
            start = match.end()
            last = _LAST_WORD.search(piece)
            word = last.group(1) if last and piece.endswith(".") else ""
            if word.lower() in ABBREVIATIONS or (len(word) == 1 and word.isupper() and word != "I"):
                # "Mr." or an initial ("J. Smith"; not the pronoun "I."): the sentence goes on.
                pieces.append(piece)
                continue
            pieces.append(piece)
            sentences.append(" ".join(pieces))
            pieces = []
        pieces.append(paragraph[start:].strip())
        rest = " ".join(p for p in pieces if p)
        if rest:
            sentences.append(rest)
    return [s for s in sentences if re.search(r"[a-z]", s)]


# -- 3. tokens ---------------------------------------------------------------------------------
_TOKEN = re.compile(
    r"\b(?:" + "|".join(sorted(ABBREVIATIONS)) + r")\."  # mr.  dr.  st.
    r"|\d+(?:,\d{3})+(?:\.\d+)?"  # 60,000  1,200
    r"|[^\W_]+(?:['\-][^\W_]+)*(?:(?<=[sn])'(?![^\W_]))?"  # words; holmes' comin' keep the apostrophe
    r"|[.!?]+|[,;:]"  # punctuation tokens
)


def tokenize(sentence: str) -> list[str]:
    """Lowercased tokens, punctuation split off as in the challenge's questions.

    ``"Mr. Holmes's dog-cart -- and 60,000 'pounds,' said he!"`` gives
    ``mr. holmes's dog-cart and 60,000 pounds , said he !``. A run of ``.``/``!``/``?``
    (an ellipsis, ``?!``) becomes one token: ``?`` if it holds one, else ``!``, else ``.``.
    """
    tokens = []
    for token in _TOKEN.findall(sentence.lower()):
        if len(token) > 1 and token[0] in ".!?":
            token = "?" if "?" in token else "!" if "!" in token else "."
        tokens.append(token)
    return tokens


def novel_sentences(text: str) -> list[list[str]]:
    """A Gutenberg file's text -> tokenized sentences of its body (steps 1-3)."""
    return [tokens for tokens in map(tokenize, split_sentences(strip_gutenberg(text))) if tokens]


# -- files ------------------------------------------------------------------------------------
def holmes_folder(data_dir=None) -> Path:
    return resolve_data_dir(data_dir) / FOLDER


def _missing_message(what: str, folder: Path, names: list[str], why: str, url: str) -> str:
    listed = "\n".join(f"  {name}  (or {name}.gz)" for name in names[:10])
    more = f"\n  ... and {len(names) - 10} more" if len(names) > 10 else ""
    return (f"{what}: {len(names)} file(s) missing from {folder}\n{listed}{more}\n{why}\n"
            f"Put these files in {folder} (plain or gzip-compressed), or point the data directory elsewhere "
            f"with the environment variable MLM_DATA_DIR or the data_dir setting. They come from the GitHub "
            f"repository {SOURCE_REPO} at commit {SOURCE_COMMIT}, e.g.\n  {url}")


def _locate(folder: Path, expected: dict[str, str], urls: dict[str, str], what: str,
            download: bool | None) -> dict[str, Path]:
    found = {name: find_file(folder, name) for name in expected}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        example = urls[missing[0]]
        if not download_allowed(download):
            raise DataError(_missing_message(what, folder, missing, "Downloading is switched off.", example))
        try:
            for name in missing:
                found[name] = download_file((urls[name],), folder / name, expected[name])
        except DataError as err:
            raise DataError(_missing_message(what, folder, missing, f"The download failed ({err}).", example)) from err
    for name, path in found.items():
        verify_file(path, expected[name])
    return found  # type: ignore[return-value]


def locate_novels(data_dir=None, download: bool | None = None, novels: Sequence[str] | None = None) -> dict[str, Path]:
    """Verified paths of the training novels (all 53, or the named ones), in file-name order."""
    names = sorted(NOVELS) if novels is None else list(novels)
    unknown = [n for n in names if n not in NOVELS]
    if unknown:
        raise DataError(f"unknown Holmes novel(s) {unknown}; known: {', '.join(sorted(NOVELS))}")
    folder = holmes_folder(data_dir) / NOVELS_FOLDER
    urls = {name: f"{NOVELS_URL}/{name}" for name in names}
    return _locate(folder, {n: NOVELS[n] for n in names}, urls, "Holmes training novels (MSR challenge)", download)


def locate_questions(data_dir=None, download: bool | None = None) -> dict[str, Path]:
    """Verified paths of ``testing_data.csv`` and ``test_answer.csv``."""
    return _locate(holmes_folder(data_dir), QUESTION_FILES, QUESTION_URLS,
                   "MSR Sentence Completion questions", download)


# -- the challenge questions ---------------------------------------------------------------------
BLANK = "_____"
LETTERS = ("a", "b", "c", "d", "e")
QUESTION_HEADER = ["id", "question", "a)", "b)", "c)", "d)", "e)"]
ANSWER_HEADER = ["id", "answer"]


@dataclass(frozen=True)
class Question:
    """One challenge question: the sentence with ``_____``, five candidates, the right one's index."""

    id: int
    text: str
    candidates: tuple[str, ...]
    answer: int  # 0..4, the index of the correct candidate (a..e)

    def filled(self, k: int) -> str:
        return self.text.replace(BLANK, self.candidates[k], 1)

    def candidate_tokens(self, k: int) -> list[str]:
        """The sentence with candidate ``k`` filled in, tokenized like the training text."""
        return tokenize(self.filled(k))

    @property
    def blank_index(self) -> int:
        """Token position of the filled-in word (the number of tokens before the blank)."""
        return len(tokenize(self.text.split(BLANK, 1)[0]))


def _csv_rows(path: Path, header: list[str]) -> list[tuple[int, list[str]]]:
    try:
        text = read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{path} is not UTF-8 text ({err}); is it the right file?") from err
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or [c.strip() for c in rows[0]] != header:
        found = rows[0] if rows else "an empty file"
        raise DataError(f"{path}: expected the header {','.join(header)}, found {found}. Is this the MSR "
                        f"sentence completion file (testing_data.csv / test_answer.csv)?")
    out = []
    for line_no, row in enumerate(rows[1:], start=2):
        if not row or not any(c.strip() for c in row):
            continue  # a blank line
        if len(row) != len(header):
            raise DataError(f"{path}, line {line_no}: expected {len(header)} fields ({','.join(header)}), "
                            f"found {len(row)}: {row}")
        out.append((line_no, [c.strip() for c in row]))
    return out


def read_questions(questions_csv: str | Path, answers_csv: str | Path) -> list[Question]:
    """Parse ``testing_data.csv`` and ``test_answer.csv`` (any number of questions), checking the format.

    Every question needs an integer id, exactly one ``_____`` and five non-empty candidates;
    every id needs exactly one answer letter a-e. Errors name the file and line.
    """
    questions_csv, answers_csv = Path(questions_csv), Path(answers_csv)
    answers: dict[int, int] = {}
    for line_no, (qid, letter) in _csv_rows(answers_csv, ANSWER_HEADER):
        if not qid.isdigit():
            raise DataError(f"{answers_csv}, line {line_no}: the id {qid!r} is not a number")
        if letter.lower() not in LETTERS:
            raise DataError(f"{answers_csv}, line {line_no}: the answer {letter!r} is not one of a, b, c, d, e")
        if int(qid) in answers:
            raise DataError(f"{answers_csv}, line {line_no}: question {qid} has a second answer")
        answers[int(qid)] = LETTERS.index(letter.lower())
    questions, seen = [], set()
    for line_no, (qid, text, *candidates) in _csv_rows(questions_csv, QUESTION_HEADER):
        where = f"{questions_csv}, line {line_no}"
        if not qid.isdigit():
            raise DataError(f"{where}: the id {qid!r} is not a number")
        if int(qid) in seen:
            raise DataError(f"{where}: question {qid} appears twice")
        if text.count(BLANK) != 1:
            raise DataError(f"{where}: a question needs exactly one blank {BLANK}, found {text.count(BLANK)}: {text!r}")
        empty = [LETTERS[i] for i, c in enumerate(candidates) if not tokenize(c)]
        if empty:
            raise DataError(f"{where}: candidate(s) {', '.join(empty)} hold no word")
        if int(qid) not in answers:
            raise DataError(f"{where}: question {qid} has no answer in {answers_csv}")
        seen.add(int(qid))
        questions.append(Question(int(qid), text, tuple(candidates), answers[int(qid)]))
    extra = sorted(set(answers) - seen)
    if extra:
        raise DataError(f"{answers_csv} answers question(s) {extra[:5]} that {questions_csv} does not have")
    if not questions:
        raise DataError(f"{questions_csv} holds no questions")
    return questions


def load_questions(data_dir=None, download: bool | None = None) -> list[Question]:
    """The 1,040 challenge questions with their answers, from the verified files of the data directory."""
    paths = locate_questions(data_dir, download)
    return read_questions(paths["testing_data.csv"], paths["test_answer.csv"])  # sha256-checked: 1,040 questions


# -- the tokenized-sentence cache ------------------------------------------------------------------
def cache_dir(explicit=None) -> Path:
    """Where tokenized novels are kept: the argument, ``$MLM_CACHE_DIR``, or ``~/.cache/mlm/tokenized``."""
    if explicit not in (None, ""):
        return Path(explicit).expanduser()
    env = os.environ.get(ENV_CACHE_DIR)
    return Path(env).expanduser() if env else default_cache_dir() / "tokenized"


def read_novel(path: Path, sha256: str, cache: Path | None = None) -> list[list[str]]:
    """Tokenized sentences of one novel, from the cache when it holds this file's version.

    ``cache=None`` parses without caching. The cache file is named by the tokenizer version
    and the novel's sha256, so a changed file or tokenizer never reads stale sentences; a
    cache that cannot be written (read-only home) is simply skipped.
    """
    cached = None if cache is None else cache / f"holmes-v{TOKENIZER_VERSION}-{path.name.split('.')[0]}-{sha256[:16]}.txt.gz"
    if cached is not None and cached.is_file():
        try:
            text = gzip.decompress(cached.read_bytes()).decode("utf-8")
            return [list(map(sys.intern, line.split(" "))) for line in text.split("\n") if line]
        except (OSError, EOFError, UnicodeDecodeError):
            pass  # a damaged cache file is rebuilt below
    # One string object per word type, not per token: the whole subset takes ~5x less memory.
    sentences = [list(map(sys.intern, s)) for s in novel_sentences(read_bytes(path).decode("latin-1"))]
    if cached is not None:
        try:
            data = "\n".join(" ".join(s) for s in sentences).encode("utf-8")
            atomic_write_bytes(cached, gzip.compress(data, compresslevel=1))
        except OSError:
            pass
    return sentences


# -- the corpus ----------------------------------------------------------------------------------------
def top_k_vocabulary(sentences: Sequence[Sequence[str]], vocab_size: int | None) -> Vocabulary:
    """``<pad> <eos> <unk> <bos>`` and the ``vocab_size`` most frequent words (None: all words).

    Ties are broken alphabetically, like :meth:`Vocabulary.build`; ``counts`` of ``<unk>`` is
    the number of training tokens it stands for.
    """
    counter: Counter[str] = Counter()
    for sentence in sentences:
        counter.update(sentence)
    ranked = sorted(counter, key=lambda w: (-counter[w], w))
    keep = ranked if vocab_size is None else ranked[:vocab_size]
    unk_count = sum(counter[w] for w in ranked[len(keep):])
    words = [PAD, EOS, UNK, BOS] + keep
    counts = [0, len(sentences), unk_count, 0] + [counter[w] for w in keep]
    return Vocabulary(words, counts)


def question_sentences(data_dir=None, download: bool | None = None) -> list[list[str]]:
    """The 1,040 challenge sentences with the correct word filled in, tokenized."""
    return [q.candidate_tokens(q.answer) for q in load_questions(data_dir, download)]


def load_holmes(data_dir=None, download: bool | None = None, vocab_size: int | None = DEFAULT_VOCAB_SIZE,
                max_train_tokens: int | None = None, valid_every: int = DEFAULT_VALID_EVERY,
                novels: Sequence[str] | None = None, cache: str | os.PathLike | None | bool = True) -> Corpus:
    """The Holmes corpus: train/valid sentences from the novels, test = the challenge sentences.

    Novels are read in file-name order (or the order of ``novels``); every ``valid_every``-th
    sentence is held out for validation. With ``max_train_tokens`` reading stops once the
    training split holds that many tokens (words + one ``<eos>`` per sentence; the same cut as
    :func:`~mlm.data.batching.truncate_lines`), so a reduced run parses only the first novels and
    its vocabulary comes from the text it trains on. ``cache``: True for the default cache
    folder, a path, or False/None to parse without caching. Each novel is one document.
    """
    if valid_every < 2:
        raise ValueError(f"valid_every must be at least 2, got {valid_every}")
    return _load_holmes(str(resolve_data_dir(data_dir)), download, vocab_size, max_train_tokens, valid_every,
                        None if novels is None else tuple(novels),
                        None if cache in (None, False) else str(cache_dir(None if cache is True else cache)))


@lru_cache(maxsize=4)
def _load_holmes(data_dir: str, download, vocab_size, max_train_tokens, valid_every, novels, cache) -> Corpus:
    paths = locate_novels(data_dir, download, novels)
    question_paths = locate_questions(data_dir, download)
    lines: dict[str, list[list[str]]] = {"train": [], "valid": []}
    documents: dict[str, list[int]] = {"train": [], "valid": []}
    train_tokens, index, full = 0, 0, False
    for name, path in paths.items():
        documents["train"].append(len(lines["train"]))
        documents["valid"].append(len(lines["valid"]))
        for sentence in read_novel(path, NOVELS[name], None if cache is None else Path(cache)):
            index += 1
            if index % valid_every == 0:
                lines["valid"].append(sentence)
                continue
            if max_train_tokens and train_tokens + len(sentence) + 1 > max_train_tokens and lines["train"]:
                full = True
                break
            lines["train"].append(sentence)
            train_tokens += len(sentence) + 1
        if full:
            break
    # A novel that contributed no sentence to a split is no document of it.
    documents = {split: sorted(set(s for s in starts if s < len(lines[split])) | {0}) for split, starts in documents.items()}
    lines["test"] = question_sentences(data_dir, download)
    documents["test"] = [0]
    vocab = top_k_vocabulary(lines["train"], vocab_size)
    all_paths = {**{f"novel:{n}": p for n, p in paths.items()}, **question_paths}
    return Corpus("holmes", lines, documents, vocab, all_paths)
