"""mlm: memory-augmented recurrent language models, the package the book imports.

Every model is one pipeline (DESIGN.md section 2)::

    tokens -> Embedding -> LSTM stack -> memory head -> softmax

`mlm.data` reads the corpora and builds batches for the three training protocols,
`mlm.models` holds the pipeline and its heads, `mlm.training` / `mlm.evaluation`
train and score models, and `mlm.configs` holds the papers' presets.
"""

from mlm.configs import Config, ConfigError, get_preset, list_presets
from mlm.evaluation import evaluate
from mlm.training import build_batches, build_model, load_data, train

__version__ = "0.1.0"
__all__ = ["Config", "ConfigError", "get_preset", "list_presets", "evaluate", "build_batches", "build_model",
           "load_data", "train"]
