"""Corpora, vocabulary and the batchers of the three training protocols."""

from mlm.data.batching import (Batch, Batches, DocumentBatches, SentenceBatches, StreamBatches, truncate_documents,
                               truncate_lines)
from mlm.data.corpora import (REGISTRY, Corpus, DataError, load_corpus, locate_corpus, read_lines,
                              resolve_data_dir)
from mlm.data.synthetic import synthetic_corpus, synthetic_lines
from mlm.data.vocab import BOS, EOS, PAD, UNK, Vocabulary

__all__ = [
    "Batch", "Batches", "StreamBatches", "SentenceBatches", "DocumentBatches", "truncate_documents", "truncate_lines",
    "REGISTRY", "Corpus", "DataError", "load_corpus", "locate_corpus", "read_lines", "resolve_data_dir",
    "synthetic_corpus", "synthetic_lines", "Vocabulary", "BOS", "EOS", "PAD", "UNK",
]
