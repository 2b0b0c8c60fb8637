"""The grading child's confinement on Linux, with ctypes alone: a Landlock ruleset and a seccomp filter.

:func:`landlock` (kernels from 5.13 with Landlock enabled): from then on the process reads only under the
folders it was given (the standard library, torch and numpy, its own temporary folder) and writes nowhere, so
the book's code, the solutions and the other students' files are out of its reach, whatever path it opens.

:func:`install` (x86_64 and aarch64): once the seccomp filter is installed the process, its threads and anything it starts can no longer: open a file for writing or
create, rename, remove or change the mode of one; signal another process (``kill`` of the grader) or start a
session of its own (which would escape the grader's kill of its process group); trace, or read and write the
memory of, another process; take a file descriptor from one; open a socket; run a program; start a process
(``fork``, ``vfork``, ``clone`` without ``CLONE_THREAD``; ``clone3``, whose flags a filter cannot read, answers
"not implemented", so the C library starts its threads with ``clone``); use io_uring, bpf or perf (ways around
the filter). Each refused call fails with ``EPERM``, as a permission would.

Both raise ``OSError`` where the kernel refuses and :func:`install` ``NotImplementedError`` on another
architecture; the grader then says which protections were missing.
"""

from __future__ import annotations

import ctypes
import platform
import struct

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# Refused whatever their arguments.
BLOCKED = {
    "x86_64": [85, 437, 76, 77, 82, 264, 316, 83, 258, 84, 86, 265, 87, 263, 88, 266, 90, 91, 268, 452, 92, 93,
               94, 260, 132, 235, 280, 261, 133, 259, 188, 189, 190, 197, 198, 199, 200, 424, 438, 101, 310, 311,
               112, 109, 425, 426, 427, 165, 166, 161, 41, 53, 59, 322, 321, 298],
    "aarch64": [437, 45, 46, 38, 276, 34, 37, 35, 36, 52, 53, 452, 54, 55, 88, 33, 5, 6, 7, 14, 15, 16, 130, 424,
                438, 117, 270, 271, 157, 154, 425, 426, 427, 40, 39, 51, 198, 199, 221, 281, 280, 241],
}
# Starting a process: fork and vfork refused (above, x86_64), clone allowed only for a thread, clone3 "not
# implemented" (its flags are behind a pointer the filter cannot follow; the C library then falls back to clone).
FORK = {"x86_64": [57, 58], "aarch64": []}
CLONE, CLONE3, CLONE_THREAD = {"x86_64": 56, "aarch64": 220}, 435, 0x00010000
# Signals: allowed only to the process itself (argument 0 is its pid): kill, tgkill, rt_sigqueueinfo,
# rt_tgsigqueueinfo.
OWN_PID_ONLY = {"x86_64": [62, 234, 129, 297], "aarch64": [129, 131, 138, 240]}
# open / openat: allowed only without O_WRONLY, O_RDWR, O_CREAT, O_TRUNC or O_APPEND (the flags argument's index).
OPEN_FLAGS = {"x86_64": [(2, 1), (257, 2)], "aarch64": [(56, 2)]}
WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000

LD_W_ABS, JEQ_K, JSET_K, JGE_K, RET_K = 0x20, 0x15, 0x45, 0x35, 0x06
ALLOW, DENY, NOT_IMPLEMENTED = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38  # ALLOW, ERRNO | EPERM, ERRNO | ENOSYS
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


def program(arch: str, pid: int) -> list[tuple[int, int, object, object]]:
    """The filter as (code, k, jump if true, jump if false); jumps are labels, resolved by :func:`assemble`."""
    code = [(LD_W_ABS, 4, None, None), (JEQ_K, AUDIT_ARCH[arch], None, "deny"), (LD_W_ABS, 0, None, None),
            (JGE_K, 0x40000000, "deny", None)]  # the x32 ABI's numbers
    code += [(JEQ_K, number, "deny", None) for number in BLOCKED[arch] + FORK[arch]]
    code += [(JEQ_K, CLONE[arch], "clone", None), (JEQ_K, CLONE3, "enosys", None)]
    code += [(JEQ_K, number, "own_pid", None) for number in OWN_PID_ONLY[arch]]
    code += [(JEQ_K, number, f"flags{index}", None) for number, index in OPEN_FLAGS[arch]]
    code += [(RET_K, ALLOW, None, None),
             ("own_pid", LD_W_ABS, 16, None, None), (JEQ_K, pid, None, "deny"), (LD_W_ABS, 20, None, None),
             (JEQ_K, 0, "allow", "deny")]
    for index in sorted({i for _, i in OPEN_FLAGS[arch]}):
        code += [(f"flags{index}", LD_W_ABS, 16 + 8 * index, None, None), (JSET_K, WRITE_FLAGS, "deny", "allow")]
    code += [("clone", LD_W_ABS, 16, None, None), (JSET_K, CLONE_THREAD, "allow", "deny"),  # flags: argument 0
             ("enosys", RET_K, NOT_IMPLEMENTED, None, None)]
    code += [("allow", RET_K, ALLOW, None, None), ("deny", RET_K, DENY, None, None)]
    return code


def assemble(code) -> bytes:
    labels, plain = {}, []
    for item in code:
        if isinstance(item[0], str):
            labels[item[0]] = len(plain)
            item = item[1:]
        plain.append(item)
    out = []
    for i, (op, k, true, false) in enumerate(plain):
        jt, jf = (0 if j is None else labels[j] - i - 1 for j in (true, false))
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise ValueError("a jump too long for one BPF instruction")
        out.append(struct.pack("HBBI", op, jt, jf, k))
    return b"".join(out)


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(pid: int) -> None:
    arch = platform.machine()
    if arch not in AUDIT_ARCH:
        raise NotImplementedError(f"no filter for {arch}")
    data = assemble(program(arch, pid))
    buffer = ctypes.create_string_buffer(data, len(data))
    prog = _Program(len(data) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
            libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "the kernel refused the seccomp filter")


# Landlock (linux/landlock.h): the system calls' numbers are the same on every architecture.
CREATE_RULESET, ADD_RULE, RESTRICT_SELF, RULE_PATH_BENEATH = 444, 445, 446, 1
READ = (1 << 0) | (1 << 2) | (1 << 3)  # execute, read a file, read a directory
ABI_RIGHTS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}  # every right of the ABI


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock(readable: list[str]) -> None:
    """Restrict this process to reading under ``readable``; everything else of the file system is refused."""
    import os

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        raise OSError(ctypes.get_errno(), "Landlock is not enabled in this kernel")
    handled = ABI_RIGHTS[max(k for k in ABI_RIGHTS if k <= abi)]
    attr = _RulesetAttr(handled)
    ruleset = libc.syscall(CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for path in readable:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneath(READ & handled, fd)
                if libc.syscall(ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule),
                                ctypes.c_uint32(0)) != 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
            finally:
                os.close(fd)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
                libc.syscall(RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
