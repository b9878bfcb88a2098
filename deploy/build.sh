#!/bin/sh
# build.sh — installs dependencies, then configures (or reconfigures) and compiles a build directory.
# usage: deploy/build.sh [BUILD_DIR] [meson options...]     (default BUILD_DIR: build)
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
[ $# -gt 0 ] && shift

deploy/install-deps.sh
# nvcc usually lives outside PATH; with it found, meson compiles the CUDA code too.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    PATH="$PATH:/usr/local/cuda/bin"
    export PATH
fi
if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
else
    meson setup "$dir" "$@"
fi
ninja -C "$dir"
