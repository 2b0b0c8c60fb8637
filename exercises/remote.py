"""The grader's side of a grading child: the submission as a proxy whose functions run in another process.

:class:`Session` starts :mod:`exercises.sandbox` in a fresh temporary folder on a copy of the submission, and
:class:`RemoteModule` stands for the loaded file: calling ``module.f(x)`` sends ``x`` to the child, which calls
the submission's ``f`` and sends back what it returned, as JSON. The checks keep their code and compare what
comes back with references computed here; nothing the child sends is ever executed or unpickled.

What the checks need beyond plain calls travels too, always as values:

* the grader's functions given as arguments (``drop``, ``cell``) or put in the submission's namespace
  (``module.lstm_cell = reference``) run here when the child calls them (callbacks, honoured only during
  the call that passed them or while the replacement stands);
* gradients: a call whose inputs require grad is a :class:`torch.autograd.Function` here, whose backward asks
  the child for the vector-Jacobian product of that call, so ``.backward()`` and ``gradcheck`` work as usual;
* the arguments are sent as copies: what a function does to them (values written in place, ``detach_()``, a
  module's parameter replaced) stays in the child, so a submission cannot change the grader's inputs and with
  them the references computed from them. A check that tests such a change asks for it
  (``get_function(module, name, in_place=True)``): then the changes are reported and made to the grader's
  objects, and the check computes its references from copies taken before the call.

Every wait has the current check's deadline: a child that runs out of time, dies, or answers out of turn is
stopped (its whole process group) and that check fails; the next check starts a fresh child.
"""

from __future__ import annotations

import builtins
import itertools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path

import torch
from torch import nn

from exercises import sandbox
from exercises.sandbox import WireError, decode, encode, read_frame

HERE = Path(__file__).resolve().parent
LOAD_TIMEOUT = 90.0  # seconds to start a child and load the submission (importing torch on a busy machine)
SAFE_BASES = {name: getattr(builtins, name) for name in (
    "ValueError", "TypeError", "IndexError", "KeyError", "RuntimeError", "NotImplementedError", "AssertionError",
    "ZeroDivisionError", "AttributeError", "ArithmeticError", "LookupError", "OverflowError")}


class ChildStopped(Exception):
    """The grading child ran out of time, died or broke the protocol; the current check fails."""


class RemoteError(Exception):
    """An exception raised by the submission; it is also an instance of the builtin the submission's was
    (``except ValueError`` in a check catches a student's ``ValueError``)."""

    type_name, where, function = "Exception", "", ""


def remote_error(reply: dict) -> RemoteError:
    bases = [b for b in reply.get("bases", []) if b in SAFE_BASES][:1]
    cls = type(f"Remote{bases[0] if bases else 'Error'}", (RemoteError, *(SAFE_BASES[b] for b in bases)), {})
    error = cls(str(reply.get("message", ""))[:500])
    error.type_name = str(reply.get("type", "Exception"))[:80]
    error.where, error.function = str(reply.get("where", ""))[:80], str(reply.get("function", ""))[:80]
    return error


def protect_self() -> None:
    """Make this process non-dumpable (Linux): others of the same user can no longer read its memory."""
    if sys.platform == "linux":
        try:
            import ctypes

            ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
        except (OSError, AttributeError):
            pass


def _library_paths() -> list[str]:
    import numpy

    return sorted({str(Path(torch.__file__).resolve().parents[1]), str(Path(numpy.__file__).resolve().parents[1])})


_PYTHON: list[str] = []


def child_python() -> str:
    """The interpreter that runs the grading child. Run as root, the child becomes ``nobody``, which must still
    read the standard library as the submission imports from it: where this interpreter's lies in a folder
    only root reads (a Python under ``/root``, as pyenv installs it), another of the same version that
    ``nobody`` can read is taken (``/usr/bin/python3.11``: torch and numpy come from the same folders either
    way). Where there is none the child keeps this one, stays root, and the report says so."""
    if _PYTHON:
        return _PYTHON[0]
    chosen = sys.executable
    if sys.platform == "linux" and os.geteuid() == 0 and not sandbox._readable_by_all(
            [os.path.dirname(os.__file__), *_library_paths()]):
        version = f"{sys.version_info[0]}.{sys.version_info[1]}"
        for candidate in (f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
            if _readable_python(candidate, version):
                chosen = candidate
                break
    _PYTHON.append(chosen)
    return chosen


def _readable_python(path: str, version: str) -> bool:
    """Whether ``path`` is a Python ``version`` whose standard library every user can read."""
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        return False
    probe = "import os, sys; print(os.path.dirname(os.__file__)); print('%d.%d' % sys.version_info[:2])"
    try:
        done = subprocess.run([path, "-I", "-S", "-c", probe], capture_output=True, text=True, timeout=30, env={})
    except (OSError, subprocess.SubprocessError):
        return False
    lines = done.stdout.split()
    return done.returncode == 0 and len(lines) == 2 and lines[1] == version and sandbox._readable_by_all([lines[0]])


class Session:
    """One submission in a child process, started on demand and started again after a failed check."""

    def __init__(self, source: str, verbose: bool = False):
        self.source, self.verbose = source, verbose
        self.child, self.folder, self.functions, self.not_shut = None, None, [], ""
        self.overrides: dict[str, object] = {}  # names the grader replaced in the submission: its function or "own"
        self.deadline, self.limit, self.stopped = None, 0.0, ""
        self.ids = itertools.count(1)
        self.released: list[int] = []  # calls whose graphs no output here needs any more
        self.calling = ""  # the submission's function being called now
        self.hung: set[str] = set()  # functions that ran out of time once: later checks fail them at once

    # -- the child's life ------------------------------------------------------------------------------------

    def start(self) -> None:
        protect_self()
        self.folder = Path(tempfile.mkdtemp(prefix="grading-"))
        for name in ("sandbox.py", "confine.py"):
            shutil.copy(HERE / name, self.folder / name)
        (self.folder / "submission.py").write_text(self.source, encoding="utf-8")
        for path in (self.folder, *self.folder.iterdir()):
            path.chmod(0o755 if path.is_dir() else 0o644)  # readable by the child once it is `nobody`
        requests_r, self.requests = os.pipe()
        self.replies, replies_w = os.pipe()
        os.set_blocking(self.requests, False)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.folder), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "LC_ALL": "C.UTF-8", "TORCHINDUCTOR_CACHE_DIR": str(self.folder)}  # torch's lazy imports look there
        command = [child_python(), "-I", "-S", "-B", str(self.folder / "sandbox.py"), str(requests_r),
                   str(replies_w), json.dumps(_library_paths()), "1" if self.verbose else "0"]
        quiet = None if self.verbose else subprocess.DEVNULL
        self.child = subprocess.Popen(command, cwd=self.folder, env=env, pass_fds=(requests_r, replies_w),
                                      stdin=subprocess.DEVNULL, stdout=quiet, stderr=quiet, start_new_session=True)
        os.close(requests_r)
        os.close(replies_w)
        self.deadline, self.limit = time.monotonic() + LOAD_TIMEOUT, LOAD_TIMEOUT
        reply = self.receive()
        if reply.get("op") == "error":
            self.close()
            raise remote_error(reply)
        if reply.get("op") != "loaded" or not isinstance(reply.get("functions"), list):
            self.stop("the grading process did not start as expected")
        self.functions = [str(f) for f in reply["functions"]]
        self.not_shut = str(reply.get("not_shut", ""))[:300]
        for name, value in self.overrides.items():
            self.apply_override(name, value)

    def begin_check(self, limit: float) -> None:
        """A new check with ``limit`` seconds: a child stopped by the previous one is replaced first."""
        self.stopped = ""
        if self.child is None:
            self.start()
        self.deadline, self.limit = time.monotonic() + limit, limit

    def stop(self, reason: str) -> None:
        self.close()
        self.stopped = reason
        raise ChildStopped(reason)

    def close(self) -> None:
        if self.child is not None:
            try:
                os.killpg(self.child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.child.wait()
            for fd in (self.requests, self.replies):
                os.close(fd)
            self.child = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    # -- frames under the deadline ---------------------------------------------------------------------------

    def _wait(self, fd: int, write: bool = False) -> None:
        left = self.deadline - time.monotonic()
        ready = select.select([], [fd], [], max(left, 0))[1] if write else select.select([fd], [], [], max(left, 0))[0]
        if not ready:
            if self.calling:
                self.hung.add(self.calling)
            self.stop(f"time limit of {self.limit:g} s reached")

    def send(self, message: dict) -> None:
        if self.child is None:
            raise ChildStopped(self.stopped or "the grading process is not running")
        data = json.dumps(message).encode()
        data = len(data).to_bytes(8, "big") + data
        try:
            while data:
                self._wait(self.requests, write=True)
                data = data[os.write(self.requests, data):]
        except (BrokenPipeError, BlockingIOError):
            self.stop(f"the grading process ended (exit code {self.child.poll()})")

    def receive(self) -> dict:
        try:
            return read_frame(self.replies, self._wait)
        except EOFError:
            code = self.child.wait() if self.child is not None else None
            self.stop(f"the grading process ended (exit code {code})")
        except (WireError, ValueError, RecursionError) as exc:
            self.stop(f"the grading process sent something unreadable ({str(exc)[:100]})")

    def exchange(self, message: dict, callbacks: dict) -> dict:
        """Send a request; serve the child's callbacks until the reply to it comes."""
        self.send(message)
        while True:
            reply = self.receive()
            if reply.get("op") == "callback":
                self.serve_callback(reply, {**callbacks, **{id(v): v for v in self.overrides.values() if callable(v)}})
                continue
            if reply.get("id") != message["id"] or reply.get("op") not in ("result", "error", "grads", "done"):
                self.stop("the grading process answered out of turn")
            if reply["op"] == "error":
                raise remote_error(reply)
            return reply

    def serve_callback(self, request: dict, callbacks: dict) -> None:
        function = callbacks.get(request.get("id"))
        try:
            if function is None:
                raise LookupError("no such function of the grader's")
            args, kwargs = decode(request.get("args")), decode(request.get("kwargs"))
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise WireError("malformed arguments")
            answer = {"op": "return", "value": encode(function(*args, **kwargs))}
        except Exception as exc:  # noqa: BLE001 -- the grader's function failed on the child's arguments
            answer = {"op": "raise", "message": f"{type(exc).__name__}: {exc}"[:500]}
        self.send(answer)

    # -- what the proxy does ---------------------------------------------------------------------------------

    def apply_override(self, name: str, value) -> None:
        if self.child is None:
            return  # a fresh child applies the standing overrides when it starts
        encoded = "own" if value == "own" else {"$": "callback", "id": id(value)} if callable(value) else None
        self.exchange({"op": "set", "id": next(self.ids), "name": name, "value": encoded}, {})

    def call(self, name: str, args: tuple, kwargs: dict, in_place: bool = False):
        """Run the submission's function ``name`` in the child. A function that ran out of time in an earlier
        check fails at once, so that one that hangs costs its own checks and not the other functions' time."""
        if name in self.hung:
            raise ChildStopped(f"{name} ran out of time in an earlier check, so it is not run again")
        self.calling = name
        try:
            return self._call(name, args, kwargs, in_place)
        finally:
            self.calling = ""

    def _call(self, name: str, args: tuple, kwargs: dict, in_place: bool = False):
        if self.stopped:
            raise ChildStopped(self.stopped)
        slots, modules, callbacks = [], [], {}

        def hooks(value):
            if isinstance(value, torch.Tensor):
                slot = next((k for k, t in enumerate(slots) if t is value), None)
                if slot is None:
                    slots.append(value)
                    slot = len(slots) - 1
                return dict(encode(value), slot=slot)
            if isinstance(value, nn.Module):
                if type(value) not in (nn.Embedding, nn.Linear):
                    raise TypeError(f"cannot send a {type(value).__name__} to the grading process")
                modules.append(value)
                return {"$": "module", "kind": type(value).__name__,
                        "params": {k: hooks(p) for k, p in value.named_parameters(recurse=False)}}
            if isinstance(value, RemoteFunction):
                raise TypeError("cannot send the submission's own function back to it")
            if callable(value) and not isinstance(value, type):
                callbacks[id(value)] = value
                return {"$": "callback", "id": id(value)}
            return None

        message = {"op": "call", "id": next(self.ids), "fn": name, "args": encode(list(args), hooks),
                   "kwargs": encode(dict(kwargs), hooks), "release": self.released[:]}
        self.released.clear()
        message["grad"] = torch.is_grad_enabled() and any(t.requires_grad for t in slots)
        if message["grad"]:
            box = {"session": self, "message": message, "callbacks": callbacks, "slots": slots}
            outs = _Call.apply(box, *slots)
            reply, outs = box["reply"], outs if isinstance(outs, tuple) else ()
        else:
            reply, outs = self.exchange(message, callbacks), ()
        return self.finish(reply, slots, modules, outs, in_place)

    def finish(self, reply: dict, slots: list, modules: list, outs, in_place: bool = False):
        changes = dict(reply.get("inputs", {}))

        def hooks(message):
            if message["$"] == "input" and type(message.get("slot")) is int and 0 <= message["slot"] < len(slots):
                slot = message["slot"]
                return slots[slot] if in_place else _childs_copy(slots[slot], dict(changes.get(str(slot), {})))
            if message["$"] == "tensor" and type(message.get("out")) is int and message["out"] < len(outs):
                return outs[message["out"]]
            return None

        try:
            value = decode(reply.get("value"), hooks)
            if not in_place:
                return value  # the child worked on copies: the grader's arguments stay as they were sent
            for key, change in changes.items():
                _apply_change(slots[int(key)], change)
            for module, state in zip(modules, reply.get("modules", [])):
                for name, entry in dict(state).items():
                    if name not in dict(module.named_parameters(recurse=False)):
                        continue
                    slot = entry.get("slot") if isinstance(entry, dict) and "slot" in entry else None
                    if isinstance(slot, int) and 0 <= slot < len(slots) and isinstance(slots[slot], nn.Parameter):
                        setattr(module, name, slots[slot])
                    elif slot is None:
                        setattr(module, name, nn.Parameter(decode(entry).detach()))
        except (WireError, ValueError, TypeError, IndexError, KeyError, RuntimeError, AttributeError) as exc:
            raise remote_error({"message": f"the grader cannot read what your function returned ({exc})"[:300]})
        return value


def _childs_copy(t: torch.Tensor, change: dict) -> torch.Tensor:
    """An argument the submission returned, as it is in the child (``t`` itself where the child left it alone)."""
    if "data" in change:
        return decode(change["data"])
    if change.get("grad") is False and t.requires_grad:
        return t.detach()
    return t


def _apply_change(t: torch.Tensor, change: dict) -> None:
    """Make to the grader's tensor ``t`` what the submission did to its copy."""
    if "data" in change:
        new = decode(change["data"])
        with torch.no_grad():
            if new.shape == t.shape and new.dtype == t.dtype:
                t.copy_(new)
            else:
                t.data = new
    if change.get("grad") is False and t.requires_grad:
        t.detach_()
    elif change.get("grad") is True and not t.requires_grad and t.is_leaf:
        t.requires_grad_()


class _Call(torch.autograd.Function):
    """A call whose inputs require grad: its backward is the child's vector-Jacobian product of that call."""

    @staticmethod
    def forward(ctx, box, *slots):
        session = box["session"]
        box["reply"] = reply = session.exchange(box["message"], box["callbacks"])
        found = []

        def collect(message, depth=0):
            if isinstance(message, dict):
                if message.get("$") == "tensor" and type(message.get("out")) is int:
                    found.append(message)
                for value in message.values():
                    if isinstance(value, (dict, list)) and depth < sandbox.MAX_DEPTH:
                        collect(value, depth + 1)
            elif isinstance(message, list):
                for value in message:
                    collect(value, depth + 1)

        collect(reply.get("value"))
        found.sort(key=lambda m: m["out"])
        if [m["out"] for m in found] != list(range(len(found))):
            session.stop("the grading process sent outputs out of order")
        try:
            outs = [decode({k: v for k, v in m.items() if k not in ("grad", "out")}) for m in found]
        except WireError as exc:
            raise remote_error({"message": f"the grader cannot read what your function returned ({exc})"})
        ctx.session, ctx.id, ctx.count = session, box["message"]["id"], len(outs)
        weakref.finalize(ctx, session.released.append, ctx.id)  # the child may forget this call's graph
        ctx.grad_slots = [k for k, t in enumerate(slots) if t.requires_grad]
        ctx.shapes = [o.shape for o in outs]
        for o in outs:
            if not (o.is_floating_point() or o.is_complex()):
                ctx.mark_non_differentiable(o)
        return tuple(outs) if outs else torch.zeros(())

    @staticmethod
    def backward(ctx, *grads):
        session = ctx.session
        if session.stopped or session.child is None:
            raise ChildStopped(session.stopped or "the grading process is not running")
        message = {"op": "vjp", "id": ctx.id, "grads": [encode(g) if g is not None else None for g in grads]}
        reply = session.exchange(message, {})
        found = decode(reply.get("value"))
        if not isinstance(found, list) or len(found) != len(ctx.grad_slots):
            session.stop("the grading process sent gradients of the wrong length")
        result = [None] * (len(ctx.needs_input_grad) - 1)
        for slot, g in zip(ctx.grad_slots, found):
            result[slot] = g if isinstance(g, torch.Tensor) else None
        return (None, *result)


class RemoteFunction:
    """One of the submission's functions: calling it runs it in the child."""

    def __init__(self, session: Session, name: str, in_place: bool = False):
        self.session, self.__name__, self.in_place = session, name, in_place

    def __call__(self, *args, **kwargs):
        return self.session.call(self.__name__, args, kwargs, self.in_place)

    def keeping_changes(self) -> "RemoteFunction":
        """This function with the changes it makes to its arguments made to the grader's objects too."""
        return RemoteFunction(self.session, self.__name__, in_place=True)


class RemoteModule:
    """The submission as the checks see it: its functions, and names the grader may replace for a while."""

    def __init__(self, session: Session):
        object.__setattr__(self, "_session", session)

    def __getattr__(self, name: str):
        session = object.__getattribute__(self, "_session")
        if name in session.functions:
            return RemoteFunction(session, name)
        raise AttributeError(name)

    def __setattr__(self, name: str, value) -> None:
        session = object.__getattribute__(self, "_session")
        value = "own" if isinstance(value, RemoteFunction) and value.__name__ == name else value
        session.overrides[name] = value
        session.apply_override(name, value)
