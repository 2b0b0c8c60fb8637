"""One checks module per assignment (``ex00.py``, ``ex01.py``, ...), each exporting ``CHECKS``.

A check is a function decorated with :func:`exercises.checks.common.check` that takes the
student's loaded module, calls its functions on fixed-seed random inputs, compares them with
the reference implementation in :mod:`mlm`, and raises :class:`~exercises.checks.common.CheckFailed`
with a hint (never the answer) when something is off.
"""
