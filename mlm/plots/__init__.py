"""Figures for the chapters and reports (matplotlib, no interactive backend needed), one module per topic;
every public function is importable from ``mlm.plots`` itself."""

from mlm.plots.attentive import *  # noqa: F401,F403
from mlm.plots.claims import *  # noqa: F401,F403
from mlm.plots.common import *  # noqa: F401,F403
from mlm.plots.lstm import *  # noqa: F401,F403
from mlm.plots.memory import *  # noqa: F401,F403
from mlm.plots.noising import *  # noqa: F401,F403
from mlm.plots.recall import *  # noqa: F401,F403
from mlm.plots.short_attention import *  # noqa: F401,F403
