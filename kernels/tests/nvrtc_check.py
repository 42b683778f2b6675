#!/usr/bin/env python3
"""Compile kernels/tests/channel_test.cu (which includes gpu_cilk/channel.cuh) and
kernels/tests/xmalloc_test.cu (gpu_cilk/xmalloc.cuh) with NVRTC for
compute_80 and compute_90, no GPU needed. Fails loudly (exit 1, the full NVRTC log) on any error
or warning, and checks that every extern "C" test kernel made it into the PTX.

    python3 kernels/tests/nvrtc_check.py            # from the repository root
    NVRTC_LIB=/path/to/libnvrtc.so.12 python3 ...   # another NVRTC

Looks for libnvrtc in $NVRTC_LIB, /opt/cudapy/nvidia/cuda_nvrtc/lib, then the loader path.
"""

import ctypes
import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNELS = HERE.parent
INCLUDE = KERNELS / "include"
SOURCES = [HERE / "channel_test.cu", HERE / "xmalloc_test.cu", HERE / "ticket_queue_test.cu"]
ARCHS = ["compute_80", "compute_90"]
EXPECTED = {
    "channel_test.cu": [
        "gc_test_produce",
        "gc_test_consume",
        "gc_test_frames",
        "gc_test_frames_drain",
        "gc_test_status",
        "gc_test_two_channels",
    ],
    "xmalloc_test.cu": ["xm_init", "xm_alloc", "xm_verify", "xm_free", "xm_cycle", "xm_whole"],
    "ticket_queue_test.cu": [
        "gc_tq_test_matched",
        "gc_tq_test_prodcons",
        "gc_tq_test_status",
        "gc_tq_test_fill",
        "gc_tq_test_close",
    ],
}


def load_nvrtc():
    candidates = []
    if os.environ.get("NVRTC_LIB"):
        candidates.append(os.environ["NVRTC_LIB"])
    candidates += ["/opt/cudapy/nvidia/cuda_nvrtc/lib/libnvrtc.so.12", "libnvrtc.so.12", "libnvrtc.so"]
    errors = []
    for c in candidates:
        try:
            return ctypes.CDLL(c)
        except OSError as e:
            errors.append(f"{c}: {e}")
    sys.exit("nvrtc_check: cannot load NVRTC:\n  " + "\n  ".join(errors))


def setup(lib):
    P = ctypes.c_void_p
    lib.nvrtcCreateProgram.argtypes = [ctypes.POINTER(P), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                       ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p)]
    lib.nvrtcCompileProgram.argtypes = [P, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.nvrtcGetProgramLogSize.argtypes = [P, ctypes.POINTER(ctypes.c_size_t)]
    lib.nvrtcGetProgramLog.argtypes = [P, ctypes.c_char_p]
    lib.nvrtcGetPTXSize.argtypes = [P, ctypes.POINTER(ctypes.c_size_t)]
    lib.nvrtcGetPTX.argtypes = [P, ctypes.c_char_p]
    lib.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(P)]
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    lib.nvrtcVersion.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]


def check(lib, rc, what):
    if rc != 0:
        raise RuntimeError(f"{what}: {lib.nvrtcGetErrorString(rc).decode()}")


def compile_one(lib, src: Path, arch: str):
    prog = ctypes.c_void_p()
    check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), src.read_bytes(), str(src.name).encode(), 0, None, None),
          "nvrtcCreateProgram")
    opts = [f"--gpu-architecture={arch}", f"--include-path={INCLUDE}", "--std=c++17",
            "--display-error-number"]
    copts = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), copts)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    log = log.value.decode(errors="replace").strip()
    ptx = ""
    if rc == 0:
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(prog, buf)
        ptx = buf.value.decode()
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc, log, ptx, opts


def main():
    lib = load_nvrtc()
    setup(lib)
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    print(f"NVRTC {major.value}.{minor.value}")
    failed = False
    for src in SOURCES:
        for arch in ARCHS:
            rc, log, ptx, opts = compile_one(lib, src, arch)
            label = f"{src.relative_to(KERNELS.parent)} [{arch}]"
            if rc != 0 or re.search(r"warning", log, re.I):
                failed = True
                print(f"FAIL {label}: {lib.nvrtcGetErrorString(rc).decode()}\n  options: {' '.join(opts)}\n"
                      f"----- NVRTC log -----\n{log}\n---------------------", file=sys.stderr)
                continue
            expected = EXPECTED[src.name]
            missing = [k for k in expected if not re.search(rf"\.entry\s+{k}\s*\(", ptx)]
            if missing:
                failed = True
                print(f"FAIL {label}: kernels missing from the PTX: {missing}", file=sys.stderr)
                continue
            atomics = len(re.findall(r"\batom\.", ptx))
            print(f"ok   {label}: {len(ptx)} bytes of PTX, {len(expected)} kernels, {atomics} atom. instructions")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
