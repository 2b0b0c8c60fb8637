"""Corpora, vocabulary and the batchers of the three training protocols.

- :mod:`mlm.data.corpora`: PTB and WikiText-2 (the registry, checksums, downloads) and :class:`Corpus`;
- :mod:`mlm.data.holmes`: the MSR Sentence Completion data, the Holmes novels and the 1,040 questions;
- :mod:`mlm.data.synthetic`: a generated corpus that needs no files;
- :mod:`mlm.data.tasks`: the key-value recall task, with the position and distance of every critical token;
- :mod:`mlm.data.sentences`: WikiText paragraphs split into sentences (``data.split_sentences``);
- :mod:`mlm.data.batching`: the stream, sentence and document protocols; :mod:`mlm.data.vocab`: the vocabulary.
"""

from mlm.data.batching import (Batch, Batches, DocumentBatches, SentenceBatches, StreamBatches, protocol_batches,
                               truncate_documents, truncate_lines)
from mlm.data.corpora import (REGISTRY, Corpus, DataError, load_registered_corpus, locate_corpus, read_lines,
                              resolve_data_dir)
from mlm.data.holmes import load_holmes
from mlm.data.sentences import split_corpus, split_sentences
from mlm.data.synthetic import synthetic_corpus, synthetic_lines
from mlm.data.vocab import BOS, EOS, PAD, UNK, Vocabulary


def load_corpus(name: str, data_dir=None, download: bool | None = None, **options) -> Corpus:
    """Read corpus ``name`` (``"ptb"``, ``"wikitext-2"`` or ``"holmes"``), verifying every file first.

    ``options`` go to :func:`mlm.data.holmes.load_holmes` (``vocab_size``, ``max_train_tokens``, ...).
    """
    if name == "holmes":
        return load_holmes(data_dir, download, **options)
    if options:
        raise TypeError(f"corpus {name!r} takes no options, got {sorted(options)}")
    return load_registered_corpus(name, data_dir, download)


__all__ = [
    "Batch", "Batches", "StreamBatches", "SentenceBatches", "DocumentBatches", "protocol_batches", "truncate_documents",
    "truncate_lines",
    "REGISTRY", "Corpus", "DataError", "load_corpus", "load_holmes", "locate_corpus", "read_lines", "resolve_data_dir",
    "synthetic_corpus", "synthetic_lines", "split_corpus", "split_sentences", "Vocabulary", "BOS", "EOS", "PAD", "UNK",
]
