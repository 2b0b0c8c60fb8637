"""The papers' presets, one module per paper (importing this package registers them all).

| module | paper | chapter |
|---|---|---|
| ``zaremba2014.py`` | Zaremba et al. 2014, regularized LSTM | 01 |
| ``press2017.py`` | Press & Wolf 2017, weight tying | 01 |
| ``salton2017.py`` | Salton et al. 2017, Attentive LM | 02 |
| ``daniluk2017.py`` | Daniluk et al. 2017, short attention spans, N-gram RNN | 03 |
| ``tran2016.py`` | Tran et al. 2016, Recurrent Memory Networks | 04 |
| ``kong2019.py`` | Kong et al. 2019 (with Xie et al. 2017), noising and smoothing | 05 |
| ``synthetic.py`` | a tiny preset for tests and demos | |
| ``recall.py`` | small models on the key-value recall task (``mlm/data/tasks.py``) | 02-04 |

Each module holds its paper's full configurations, their ``reduced`` CPU variants and the numbers
the paper reports (``cfg.paper``). The configuration system itself is :mod:`mlm.configs`;
``get_preset`` and ``list_presets`` live there.
"""

from mlm.presets import daniluk2017, kong2019, press2017, recall, salton2017, synthetic, tran2016, zaremba2014

__all__ = ["daniluk2017", "kong2019", "press2017", "recall", "salton2017", "synthetic", "tran2016", "zaremba2014"]
