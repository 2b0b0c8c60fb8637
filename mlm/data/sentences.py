"""WikiText paragraphs split into sentences, for the sentence protocol (``data.split_sentences``).

A WikiText-2 line is a whole paragraph, a heading (`` = = Gameplay = = ``) or blank: 12,951 of the
36,718 training lines are empty and the others average 86 words. Salton et al.'s sentence protocol
starts every row from a zero state and cuts it at 35 inputs, so on raw lines only 29.5% of the
training targets are ever trained on; split into 77,394 sentences, 91.1% are. Their official code splits the paragraphs into sentences
before training (docs/design.md, section 10); this module does the same with a rule that needs no
tokenizer model, since WikiText is already tokenized:

* blank lines and heading lines (first and last token ``=``) are dropped;
* a paragraph is cut after every sentence-final token (``.``, ``?``, ``!``) that has more text after
  it. Decimal points and thousands separators are separate tokens in WikiText (``@.@``, ``@,@``),
  and most abbreviations keep their dots inside one token (``U.S.``), so a lone ``.`` ends a
  sentence. The rule errs where WikiText splits an abbreviation (``lit .``) and puts a closing quote
  after a full stop at the start of the next sentence (it cannot tell it from an opening one).
  The official code splits with NLTK's default sentence tokenizer (giancds/attentive_lm, README,
  "Software requirements"); the rule here needs no tokenizer model and gives a similar cut.

Every word of a kept paragraph stays, in order; only the ``<eos>`` count grows (one per sentence).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Sequence

from mlm.data.corpora import Corpus

SENTENCE_END = frozenset({".", "?", "!"})


def is_heading(line: Sequence[str]) -> bool:
    """A WikiText heading: `` = Title = ``, `` = = Section = = `` (tokens ``=`` first and last)."""
    return len(line) >= 2 and line[0] == "=" and line[-1] == "="


def split_paragraph(line: Sequence[str]) -> list[list[str]]:
    """The sentences of one tokenized paragraph, cut after each ``.``, ``?`` or ``!`` that text follows."""
    sentences, current = [], []
    for word in line:
        current.append(word)
        if word in SENTENCE_END:
            sentences.append(current)
            current = []
    if current:
        sentences.append(current)
    return sentences


def split_sentences(lines: Sequence[Sequence[str]]) -> tuple[list[list[str]], list[int]]:
    """(sentences, source): the sentences of ``lines`` without blank and heading lines, and for each
    sentence the index of the line it came from."""
    sentences, source = [], []
    for i, line in enumerate(lines):
        if not line or is_heading(line):
            continue
        for sentence in split_paragraph(line):
            sentences.append(sentence)
            source.append(i)
    return sentences, source


def split_corpus(corpus: Corpus) -> Corpus:
    """A copy of ``corpus`` with every split's paragraphs split into sentences (see the module notes).

    The vocabulary (and so every id) is kept; a document now starts at the first sentence of its
    first kept line.
    """
    lines, documents = {}, {}
    for split, split_lines in corpus.lines.items():
        sentences, source = split_sentences(split_lines)
        lines[split] = sentences
        # source is non-decreasing: a document's first sentence is the first one from a line >= its start
        starts = sorted({bisect_left(source, start) for start in corpus.documents.get(split, [0])})
        documents[split] = [s for s in starts if s < len(sentences)] or [0]
    return Corpus(corpus.name, lines, documents, corpus.vocab, corpus.paths)
