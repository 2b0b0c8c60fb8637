"""Press & Wolf (2017), *Using the Output Embedding to Improve Language Models*: weight tying
on Zaremba et al.'s LSTMs (chapter 01).
"""

from __future__ import annotations

from mlm.configs import register
from mlm.presets.zaremba2014 import ZAREMBA_SIZES, reduced_overrides, stacked_lstm_preset

# Press & Wolf (2017), section 5: Zaremba et al.'s three networks with the input and output
# embeddings tied, every other setting unchanged. (valid, test, parameters, source) as the paper
# reports them; medium + tying is not included because we could not verify Press & Wolf's number
# against their own table.
PRESS_RESULTS = {
    "small": (117.5, 112.4, "2.65M", "Press & Wolf 2017, small + weight tying"),
    "large": (77.7, 74.3, "51M", "Press & Wolf 2017, large + weight tying"),
}

for _size in ZAREMBA_SIZES:
    register(f"press2017-{_size}-tied", reduced=reduced_overrides(_size))(
        stacked_lstm_preset(_size, tied=True, results=PRESS_RESULTS))
