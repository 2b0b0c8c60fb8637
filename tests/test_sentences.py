"""WikiText paragraphs split into sentences (mlm/data/sentences.py, data.split_sentences): a hand-made
paragraph set, the real file's first lines and its training statistics, and the Salton presets."""

from __future__ import annotations

import pytest

from mlm.configs import get_preset
from mlm.data import Corpus, Vocabulary, load_corpus
from mlm.data.sentences import is_heading, split_corpus, split_sentences
from mlm.training import build_batches, load_data

RAW = [
    [],
    "= Title =".split(),
    [],
    "A b . C d ? E !".split(),
    "= = Section = =".split(),
    [],
    "F g @.@ 5 , U.S. h .".split(),
    "no end here".split(),
    'said . " Next'.split(),
]


def test_a_hand_made_paragraph_set_is_split_and_headings_and_blanks_dropped():
    sentences, source = split_sentences(RAW)
    assert sentences == [["A", "b", "."], ["C", "d", "?"], ["E", "!"], "F g @.@ 5 , U.S. h .".split(),
                         ["no", "end", "here"], ["said", "."], ['"', "Next"]]
    assert source == [3, 3, 3, 6, 7, 8, 8]
    assert is_heading("= = Section = =".split()) and not is_heading(["="]) and not is_heading("a = b".split())


def test_split_corpus_keeps_the_vocabulary_and_moves_the_documents():
    lines = {"train": RAW, "valid": RAW[3:], "test": RAW[:4]}
    vocab = Vocabulary.build(RAW)
    corpus = Corpus("wikitext-2", lines, {"train": [0, 4], "valid": [0], "test": [0]}, vocab)
    split = split_corpus(corpus)
    assert split.vocab is vocab
    assert split.documents["train"] == [0, 3]  # the second document starts at "F g ..." (line 6)
    assert len(split.lines["valid"]) == 7 and len(split.lines["test"]) == 3
    words = lambda ls: [w for line in ls if line and not is_heading(line) for w in line]  # noqa: E731
    assert words(split.lines["train"]) == words(RAW)  # every word of a kept line, in order


def trained_share(lines, cut: int = 35) -> float:
    """Share of the training targets (words + <eos>) a sentence row cut at ``cut`` inputs trains on."""
    targets = [len(line) + 1 for line in lines]
    return sum(min(n, cut) for n in targets) / sum(targets)


def test_the_real_wikitext2_file(shared_data):
    corpus = load_corpus("wikitext-2", shared_data, download=False)
    split = split_corpus(corpus)
    first = split.lines["train"][:3]
    assert first[0][:3] == ["Senjō", "no", "Valkyria"] and first[0][-2:] == ["lit", "."]  # WikiText splits "lit."
    assert first[2] == "Released in January 2011 in Japan , it is the third game in the Valkyria series .".split()
    raw = corpus.lines["train"]
    assert (len(raw), sum(not line for line in raw)) == (36_718, 12_951)
    assert len(split.lines["train"]) == 77_394 and all(split.lines["train"])
    assert not any(is_heading(line) for line in split.lines["train"])
    assert round(100 * trained_share(raw), 1) == 29.5
    assert round(100 * trained_share(split.lines["train"]), 1) == 91.1
    assert [len(split.documents[s]) for s in ("train", "valid", "test")] == [600, 60, 60]


@pytest.mark.parametrize("name", ["salton2017-wt2-single", "salton2017-wt2-combined", "salton2017-wt2-lstm"])
def test_salton_wikitext2_presets_train_on_sentences(name):
    assert get_preset(name).data.split_sentences and get_preset(name, "reduced").data.split_sentences
    assert not get_preset(name.replace("wt2", "ptb")).data.split_sentences


def test_a_salton_wikitext2_run_has_no_empty_rows(shared_data):
    cfg = get_preset("salton2017-wt2-single", "reduced", overrides=[f"data.data_dir={shared_data}"])
    batches = build_batches(cfg, load_data(cfg), "train", shuffle=False)
    for batch in batches.batches:
        assert batch.mask.sum(1).min() >= 2  # at least one word and <eos>: no blank line became a row
    assert batches.num_tokens > 70_000  # of the first 80,000 tokens, cut at 35 (raw paragraphs: 22,987)
