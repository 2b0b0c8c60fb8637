"""The Holmes corpus: Gutenberg header/footer stripping, sentence splitting, tokenization like the
MSR questions, file checks, splits, vocabulary, cache, and the engine's ``corpus="holmes"``.

Everything runs on small hand-written Gutenberg-like files in tmp_path; one test reads a real
novel when the shared data are present."""

from __future__ import annotations

import gzip
import hashlib
import os
from pathlib import Path

import pytest

from conftest import SHARED_DATA
from mlm.configs import get_preset
from mlm.data import corpora, holmes
from mlm.data import DataError, load_corpus
from mlm.data.holmes import load_holmes, novel_sentences, split_sentences, strip_gutenberg, tokenize
from mlm.data.vocab import BOS, EOS, PAD, UNK

pytestmark = pytest.mark.usefixtures("no_data_env")

HEADER = """***The Project Gutenberg Etext of A Test Novel, by Nobody***
******This file should be named tnovl10.txt or tnovl10.zip******

Information about Project Gutenberg (one page)
We produce about two million dollars for each hour we work.

***START**THE SMALL PRINT!**FOR PUBLIC DOMAIN ETEXTS**START***
Why is this "Small Print!" statement here?  You know: lawyers.
*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*

"""
BODY = """A TEST NOVEL

CHAPTER I

Mr. Holmes came in.  He sat down
by the fire!  "Come here," said he.

It was a dog-cart -- and a man's hat.
"""
FOOTER = """



End of The Project Gutenberg Etext of A Test Novel, by Nobody
"""


def test_strip_gutenberg_removes_the_1990s_header_and_footer():
    body = strip_gutenberg(HEADER + BODY + FOOTER)
    assert "Small Print" not in body and "Gutenberg" not in body and "lawyers" not in body
    assert body.strip() == BODY.strip()


def test_strip_gutenberg_newer_markers_and_files_without_markers():
    """A ``*** START OF`` file loses its header; a file without a marker keeps its whole text
    (minus lines naming Project Gutenberg); a title line in the first half is no footer."""
    newer = ("The Project Gutenberg EBook of X\n\n*** START OF THIS PROJECT GUTENBERG EBOOK X ***\n\n"
             + BODY + "\n*** END OF THIS PROJECT GUTENBERG EBOOK X ***\nlicense text\n")
    assert strip_gutenberg(newer).strip() == BODY.strip()
    assert strip_gutenberg(BODY).strip() == BODY.strip()
    titled = "The Project Gutenberg Etext of X, by Y\n\n" + BODY * 3
    assert strip_gutenberg(titled).strip() == (BODY * 3).strip()
    # a second footer-like line late in the text: the last one wins, the part between is kept
    two = HEADER + BODY + "\nEnd of Project Gutenberg's Etext of Part One\n\nPREFACE.\n\nA note.\n" + FOOTER
    assert "A note." in strip_gutenberg(two) and "Part One" not in strip_gutenberg(two)


def test_split_sentences_keeps_titles_initials_and_paragraphs():
    text = ("Mr. Holmes met J. Smith.  He sat down\nby the fire!  \"Come here,\" said he. 'Why?' she asked. "
            "It was I. Dr. Watson left.\n\n"
            "CHAPTER II\n\nA new paragraph starts here without a full stop")
    assert split_sentences(text) == [
        "Mr. Holmes met J. Smith.",
        "He sat down by the fire!",
        "\"Come here,\" said he.",
        "'Why?' she asked.",
        "It was I.",
        "Dr. Watson left.",
        "A new paragraph starts here without a full stop",
    ]


def test_tokenize_matches_the_question_format():
    """The questions split , ; . off, keep apostrophes and hyphens inside words and titles' periods."""
    assert tokenize("I was _____ of our little sitting-room and gladly acquiesced.".replace("_____", "weary")) == \
        "i was weary of our little sitting-room and gladly acquiesced .".split()
    assert tokenize("Mr. Holmes's dog-cart -- and 60,000 'pounds,' said he!") == \
        ["mr.", "holmes's", "dog-cart", "and", "60,000", "pounds", ",", "said", "he", "!"]
    assert tokenize('"It\'s Holmes\' comin\' to-morrow; _very_ (odd)..."') == \
        ["it's", "holmes'", "comin'", "to-morrow", ";", "very", "odd", "."]
    assert tokenize("What?! No...") == ["what", "?", "no", "."]


def test_novel_sentences_runs_the_whole_pipeline():
    assert novel_sentences(HEADER + BODY + FOOTER) == [
        "mr. holmes came in .".split(),
        "he sat down by the fire !".split(),
        "come here , said he .".split(),
        "it was a dog-cart and a man's hat .".split(),
    ]


# -- files, splits, vocabulary, cache ------------------------------------------------------------------
def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


QUESTIONS = ("id,question,a),b),c),d),e)\n"
             "1,Mr. Holmes _____ in.,came,went,sat,ran,fell\n"
             "2,\"It was a dog-cart , and a man's _____.\",hat,dog,fire,cart,zebra\n")
ANSWERS = "id,answer\n1,a\n2,a\n"


def _novel(i: int) -> bytes:
    body = "\n\n".join(f"Sentence {'xyz'[i]} number {j} is here." for j in range(10))
    return (HEADER + body + FOOTER).encode("latin-1")


@pytest.fixture
def fake_holmes(tmp_path, monkeypatch):
    """A data dir with three tiny novels and two questions, registered with matching sha256."""
    root = tmp_path / "data"
    folder = root / holmes.FOLDER
    (folder / holmes.NOVELS_FOLDER).mkdir(parents=True)
    novels = {}
    for i, name in enumerate(["AAA10.TXT", "BBB10.TXT", "CCC10.TXT"]):
        data = _novel(i)
        (folder / holmes.NOVELS_FOLDER / (name + ".gz")).write_bytes(gzip.compress(data))
        novels[name] = _sha(data)
    (folder / "testing_data.csv").write_text(QUESTIONS)
    (folder / "test_answer.csv").write_text(ANSWERS)
    monkeypatch.setattr(holmes, "NOVELS", novels)
    monkeypatch.setattr(holmes, "QUESTION_FILES", {"testing_data.csv": _sha(QUESTIONS.encode()),
                                                   "test_answer.csv": _sha(ANSWERS.encode())})
    holmes._load_holmes.cache_clear()
    yield root
    holmes._load_holmes.cache_clear()


def test_load_holmes_splits_documents_and_vocabulary(fake_holmes, tmp_path):
    corpus = load_holmes(fake_holmes, vocab_size=5, valid_every=4, cache=tmp_path / "cache")
    # 3 novels x 10 sentences; sentences 4, 8, ..., 28 (1-based, counted across novels) are held out
    assert len(corpus.lines["valid"]) == 7 and len(corpus.lines["train"]) == 23
    assert corpus.lines["valid"][0] == "sentence x number 3 is here .".split()
    assert corpus.lines["train"][3] == "sentence x number 4 is here .".split()
    assert corpus.documents["train"] == [0, 8, 15] and corpus.documents["valid"] == [0, 2, 5]
    assert corpus.lines["test"] == ["mr. holmes came in .".split(), "it was a dog-cart , and a man's hat .".split()]
    vocab = corpus.vocab
    assert vocab.itos[:4] == [PAD, EOS, UNK, BOS] and len(vocab) == 4 + 5
    # "sentence number is here ." occur 23 times each: the five most frequent words, ties alphabetical
    assert vocab.itos[4:] == [".", "here", "is", "number", "sentence"]
    assert vocab.counts[vocab.unk_id] == 23 * 2  # the letter and the digit of every training sentence
    assert corpus.ids("test")[0][:2] == [vocab.unk_id, vocab.unk_id]  # mr. holmes: outside the vocabulary
    assert load_corpus("holmes", fake_holmes, vocab_size=5, valid_every=4, cache=False).lines == corpus.lines


def test_max_train_tokens_reads_only_the_first_novels(fake_holmes):
    corpus = load_holmes(fake_holmes, vocab_size=None, max_train_tokens=80, valid_every=4, cache=False)
    # 7 tokens + <eos> per sentence: 10 training sentences fill the 80 tokens exactly (8 of novel x,
    # whose 4th and 8th sentences are held out, then 2 of novel y around its held-out 12th)
    assert corpus.num_tokens("train") == 80 and len(corpus.lines["train"]) == 10
    assert {line[1] for line in corpus.lines["train"]} == {"x", "y"} and len(corpus.lines["valid"]) == 3
    assert "z" not in corpus.vocab  # the third novel was never read


def test_the_cache_is_written_atomically_and_used(fake_holmes, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    first = load_holmes(fake_holmes, vocab_size=None, cache=cache)
    files = sorted(p.name for p in cache.iterdir())
    assert len(files) == 3 and all(f.startswith(f"holmes-v{holmes.TOKENIZER_VERSION}-") for f in files)
    holmes._load_holmes.cache_clear()
    monkeypatch.setattr(holmes, "novel_sentences", lambda text: pytest.fail("parsed again despite the cache"))
    assert load_holmes(fake_holmes, vocab_size=None, cache=cache).lines == first.lines


def test_missing_and_corrupt_files_say_what_to_put_where(fake_holmes):
    folder = fake_holmes / holmes.FOLDER / holmes.NOVELS_FOLDER
    (folder / "BBB10.TXT.gz").unlink()
    with pytest.raises(DataError) as err:
        load_holmes(fake_holmes, download=False)
    message = str(err.value)
    assert "BBB10.TXT" in message and str(folder) in message and holmes.SOURCE_COMMIT in message
    (folder / "BBB10.TXT").write_bytes(b"not the novel")
    with pytest.raises(DataError, match="checksum mismatch"):
        load_holmes(fake_holmes, download=False)


def test_engine_loads_holmes_from_the_config(fake_holmes):
    from mlm.training import build_batches, load_data

    cfg = get_preset("synthetic-tiny", overrides={"data.corpus": "holmes", "data.data_dir": str(fake_holmes),
                                                  "data.protocol": "sentence", "data.vocab_size": 6,
                                                  "data.max_train_tokens": 100})
    corpus = load_data(cfg)
    assert corpus.name == "holmes" and len(corpus.vocab) == 10 and corpus.num_tokens("train") <= 100
    assert build_batches(cfg, corpus, "train").num_tokens == corpus.num_tokens("train")


# -- the real files (skipped without the shared data) ------------------------------------------------
def _real_data_dir() -> Path | None:
    for root in (os.environ.get(corpora.ENV_DATA_DIR), SHARED_DATA):
        if root and (Path(root) / holmes.FOLDER / holmes.NOVELS_FOLDER).is_dir():
            return Path(root)
    return None


_REAL = _real_data_dir()  # read at import, before no_data_env clears MLM_DATA_DIR


@pytest.mark.skipif(_REAL is None, reason="the Holmes novels are not available (set MLM_DATA_DIR)")
def test_real_novel_is_stripped_and_the_questions_become_the_test_split():
    corpus = load_holmes(_REAL, download=False, novels=["YOUTH10.TXT"], cache=False)
    train = corpus.lines["train"]
    text = " ".join(w for line in train for w in line)
    assert "gutenberg" not in text and "small print" not in text
    assert len(train) > 500 and train[-1][-1] in (".", "!", "?")
    assert len(corpus.lines["test"]) == 1040
    assert corpus.lines["test"][0][:4] == ["i", "have", "it", "from"] and corpus.lines["test"][0][-3:] == ["in", "london", "."]
