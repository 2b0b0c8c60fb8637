"""The grading child process: load one submission, run its checks, report each outcome on a pipe.

Started by :mod:`exercises.grader`, never by hand::

    python -m exercises.runner ASSIGNMENT PATH FD [FAILED_CHECK ...]

The parent decides the score; this process only reports, one JSON line per check on the file
descriptor FD (``{"name", "status": "pass" | "fail" | "skip", "hint"}``), then a last
``"done"`` line. What the submission
can do here cannot raise its score:

* the check functions are taken before the submission is loaded, so replacing
  ``CHECKS[i].run`` (or anything else) afterwards changes nothing;
* every check runs under ``except BaseException``: ``sys.exit(0)`` or ``KeyboardInterrupt``
  inside a student function fails that check and grading goes on;
* if the process dies (``os._exit``, a crash) or runs out of time, the parent fails every
  check that was not reported;
* the submission's imports go through a guard that refuses anything outside
  :data:`exercises.rules.ALLOWED_IMPORTS` (the source rules already forbid it; this catches
  what reading the source cannot).
"""

from __future__ import annotations

import builtins
import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path

from exercises.checks.common import CheckFailed
from exercises.rules import ALLOWED_IMPORTS, StaticCheck


def _guarded_builtins() -> dict:
    real_import = builtins.__import__

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level or name.split(".")[0] not in ALLOWED_IMPORTS:
            raise ImportError(f"a submission may not import {name!r}")
        return real_import(name, globals, locals, fromlist, level)

    guarded = dict(vars(builtins))
    guarded["__import__"] = guarded_import
    return guarded


def load_submission(path: Path, name: str):
    """Import the file at ``path`` as module ``name``, its imports guarded."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    module.__dict__["__builtins__"] = _guarded_builtins()
    sys.modules[name] = module  # dataclasses and pickling look modules up here
    spec.loader.exec_module(module)
    return module


def where(exc: BaseException, path: Path) -> tuple[str, str]:
    """(function name, " (your file, line N)") of the deepest frame of ``exc`` in ``path``."""
    function, location = "", ""
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if Path(frame.f_code.co_filename).resolve() == path:
            function, location = frame.f_code.co_name, f" (your file, line {lineno})"
    return function, location


def outcome(run, module, path: Path, verbose: bool) -> tuple[str, str]:
    """("pass" | "fail", hint) of one check function on ``module``."""
    try:
        run(module)
    except CheckFailed as failure:
        return "fail", str(failure)
    except NotImplementedError as exc:
        function, _ = where(exc, path)
        return "fail", "not implemented yet" + (f" ({function})" if function else "")
    except BaseException as exc:  # noqa: BLE001 -- a student function's SystemExit is a failure like any other
        if verbose:
            traceback.print_exc()
        _, location = where(exc, path)
        message = str(exc).splitlines()[0] if str(exc) else ""
        return "fail", f"raised {type(exc).__name__}: {message}{location}"
    return "pass", ""


def main(argv: list[str]) -> None:
    assignment_id, path, fd, *failed = argv
    verbose = os.environ.get("EXERCISES_VERBOSE") == "1"
    report = os.fdopen(int(fd), "w", buffering=1)
    path = Path(path).resolve()

    import torch

    torch.set_num_threads(1)  # tiny tensors: threads only add overhead
    from exercises.grader import REGISTRY

    # Taken now, before any student code runs: later changes to the checks module do not reach us.
    checks = [(c.name, c.run, c.requires) for c in REGISTRY[assignment_id].checks]
    failed = set(failed)

    def send(name: str, status: str, hint: str = "") -> None:
        report.write(json.dumps({"name": name, "status": status, "hint": hint}) + "\n")

    try:
        module = load_submission(path, f"_graded_ex{assignment_id}")
    except BaseException as exc:  # noqa: BLE001
        if verbose:
            traceback.print_exc()
        _, location = where(exc, path)
        hint = f"your file could not be loaded: {type(exc).__name__}: {exc}{location}"
        for name, _, _ in checks:
            send(name, "fail", hint)
        send("", "done")
        return
    for name, run, requires in checks:
        if isinstance(run, StaticCheck):
            continue  # judged by the parent, from the source
        missing = [r for r in requires if r in failed]
        if missing:
            send(name, "skip", f"fix {', '.join(missing)} first")
            failed.add(name)
            continue
        status, hint = outcome(run, module, path, verbose)
        if status != "pass":
            failed.add(name)
        send(name, status, hint)
    send("", "done")


if __name__ == "__main__":
    main(sys.argv[1:])
