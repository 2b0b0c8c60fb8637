"""mlm: memory-augmented recurrent language models, the package the book imports.

Every model is one pipeline (docs/design.md, section 2)::

    tokens -> Embedding -> LSTM stack -> memory head -> softmax

`mlm.data` reads the corpora and builds batches for the three training protocols,
`mlm.models` holds the pipeline and its heads, `mlm.training` / `mlm.evaluation`
train and score models, `mlm.configs` is the configuration system and `mlm.presets` holds
the papers' presets, one module per paper (imported here, so every preset is registered as soon
as any part of `mlm` is imported).
"""

import mlm.presets  # noqa: F401  (registers the presets)
from mlm.configs import Config, ConfigError, get_preset, list_presets
from mlm.evaluation import evaluate
from mlm.training import build_batches, build_model, load_data, train

__version__ = "0.1.0"
__all__ = ["Config", "ConfigError", "get_preset", "list_presets", "evaluate", "build_batches", "build_model",
           "load_data", "train"]
