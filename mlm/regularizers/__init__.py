"""Embedding regularizers (chapter 5): data noising (Xie et al. 2017) and variational smoothing
(Kong et al. 2019), pluggable into every model of the book through ``LanguageModel.embed`` and
its softmax layer.

``model.regularizer`` picks one:

* ``"none"``      the plain pipeline (nothing is called, the model is unchanged);
* ``"dropout"``   per-sequence element-wise embedding dropout only (``model.embed_dropout``);
* ``"noise"``     data noising, ``model.noise_scheme`` in blank / unigram / absolute / kneser-ney;
* ``"smooth"``    variational smoothing with the unigram (linear interpolation), absolute or
                  Kneser-Ney proposal, vector-wise or element-wise.
"""

from __future__ import annotations

from typing import Sequence

from mlm.regularizers.base import EmbeddingRegularizer, row_types
from mlm.regularizers.noising import DataNoising
from mlm.regularizers.prediction import evaluate_sampled
from mlm.regularizers.proposals import (SCHEMES, BigramCounts, NoisingScheme, absolute_discount_gamma, bigram_counts,
                                        kneser_ney_proposal, noising_scheme, training_stream, unigram_proposal)
from mlm.regularizers.smoothing import VariationalSmoothing, l2_coefficients, smoothed_mean

REGULARIZERS = ("none", "dropout", "noise", "smooth")


def build_regularizer(cfg, train_lines: Sequence[Sequence[int]] | None, vocab_size: int, eos_id: int,
                      blank_id: int) -> EmbeddingRegularizer | None:
    """The regularizer ``cfg.model`` asks for, with statistics counted on ``train_lines`` (the ids the
    model trains on, after any reduced-run truncation); None for ``regularizer="none"``."""
    m = cfg.model
    if m.regularizer == "none":
        return None
    if m.regularizer == "dropout":
        return EmbeddingRegularizer(vocab_size, m.embed_dropout)
    if train_lines is None:
        raise ValueError(f"model.regularizer={m.regularizer!r} counts words in the training data: pass the "
                         "corpus to build_model (build_model(cfg, vocab_size, pad_id, corpus=corpus))")
    counts = bigram_counts(training_stream(train_lines, eos_id), vocab_size)
    scheme = noising_scheme(m.noise_scheme, counts, m.noise_gamma, blank_id=blank_id)
    if m.regularizer == "noise":
        return DataNoising(scheme, m.embed_dropout)
    smooth_output = m.smooth_output if m.smooth_output is not None else (m.tie_weights or
                                                                          m.noise_scheme == "kneser-ney")
    return VariationalSmoothing(scheme, m.embed_dropout, elementwise=m.smoothing_elementwise,
                                smooth_output=smooth_output, sigma=m.smoothing_sigma,
                                l2=cfg.train.weight_decay if m.smoothing_l2 else 0.0, tied=m.tie_weights,
                                coupled=m.smoothing_coupled)


__all__ = ["REGULARIZERS", "SCHEMES", "EmbeddingRegularizer", "DataNoising", "VariationalSmoothing", "BigramCounts",
           "NoisingScheme", "bigram_counts", "training_stream", "unigram_proposal", "kneser_ney_proposal",
           "absolute_discount_gamma", "noising_scheme", "l2_coefficients", "smoothed_mean", "row_types",
           "evaluate_sampled", "build_regularizer"]
