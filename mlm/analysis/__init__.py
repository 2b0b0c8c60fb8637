"""Looking inside trained models, grouped like the book.

- :mod:`mlm.analysis.history`: attention over the history, Salton et al.'s sentence memory
  (chapter 02) and Daniluk et al.'s window (chapter 03);
- :mod:`mlm.analysis.memory_block`: Tran et al.'s Memory Block (chapter 04, section 5 of the paper);
- :mod:`mlm.analysis.common`: what they share (one sentence through a model).
"""

from mlm.analysis.history import AttentionStats, attention_stats, probe_sentence, window_attention_profile
from mlm.analysis.memory_block import (MemoryAttention, average_by_position, collect_memory_attention,
                                       distant_examples, pair_frequency_by_distance, perplexity_of,
                                       probe_memory_sentence, sample_words)

__all__ = ["AttentionStats", "attention_stats", "probe_sentence", "window_attention_profile", "MemoryAttention",
           "average_by_position", "collect_memory_attention", "distant_examples",
           "pair_frequency_by_distance", "perplexity_of", "probe_memory_sentence", "sample_words"]
