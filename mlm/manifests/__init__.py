"""Manifests for ``python -m mlm reproduce``: each module holds ``RUNS``, a list of
:class:`mlm.reproduce.RunSpec` (built with :func:`mlm.reproduce.runs`)."""
