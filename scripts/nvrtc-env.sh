#!/usr/bin/env bash
# Source this: makes NVRTC loadable on a machine without the CUDA toolkit (CI, laptops) by
# installing PyPI's nvidia-cuda-nvrtc-cu12 wheel into .ci/nvrtc (once) and putting its lib/ on
# LD_LIBRARY_PATH. On a machine with /usr/local/cuda it prefers the toolkit's own NVRTC.
# Optional: without python3, pip or network it says so and changes nothing (the NVRTC tests then
# print SKIPPED, unless GPU_CILK_REQUIRE_NVRTC=1).
#   source scripts/nvrtc-env.sh
_gc_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -e /usr/local/cuda/lib64/libnvrtc.so ] || ls /usr/local/cuda/lib64/libnvrtc.so.* >/dev/null 2>&1; then
  _gc_lib=/usr/local/cuda/lib64
else
  _gc_dir="$_gc_root/.ci/nvrtc"
  _gc_lib="$_gc_dir/nvidia/cuda_nvrtc/lib"
  if ! ls "$_gc_lib"/libnvrtc.so.* >/dev/null 2>&1; then
    if command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
      python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$_gc_dir" \
        "nvidia-cuda-nvrtc-cu12==12.9.86" \
        || echo "note: could not install the NVRTC wheel; the NVRTC tests will say SKIPPED" >&2
    else
      echo "note: no python3 with pip to install NVRTC; the NVRTC tests will say SKIPPED" >&2
    fi
  fi
  # Some loaders look for the unversioned name.
  if [ -e "$_gc_lib/libnvrtc.so.12" ] && [ ! -e "$_gc_lib/libnvrtc.so" ]; then
    ln -s libnvrtc.so.12 "$_gc_lib/libnvrtc.so"
  fi
fi
if [ -d "$_gc_lib" ]; then
  export LD_LIBRARY_PATH="$_gc_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export GPU_CILK_NVRTC_READY=1
unset _gc_root _gc_dir _gc_lib
