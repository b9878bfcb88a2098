#!/bin/sh
# docker-build-steps.sh — the steps deploy/Dockerfile runs, as one script: the Dockerfile calls it, and CI runs the
# same calls on its own machine (tests/deploy/build_steps.sh), so the recipe cannot rot unnoticed. It also builds
# and installs on a bare-metal host (deploy/g4dn.md). Debian 12 and Ubuntu 24.04 (the CUDA images' base).
#   build-deps                      compilers, Meson, Ninja and the -dev packages (as root)
#   build SRC BUILD PREFIX ARCHS    compile the programs (flashkernel-server, flashkernel, flashkernel-loadtest) with
#                                   CUDA for ARCHS (comma-separated, e.g. sm_75,compute_75) in the new directory
#                                   BUILD, install them into PREFIX/bin and the demo model into
#                                   PREFIX/share/flashkernel/demo-model
#   runtime-deps                    the shared libraries the binaries load, tini and curl (as root)
#   packages build|runtime          print the package names of one set on this system
set -eu

usage() {
    sed -n '5,11p' "$0" | sed 's/^# //' >&2
    exit 2
}

fail() {
    echo "docker-build-steps: $*" >&2
    exit 1
}

# packages build|runtime: the names on this system. Ubuntu 24.04 renamed libmicrohttpd12 to libmicrohttpd12t64 (the
# 64-bit time_t transition); the rest are the same. libgomp1: the CPU backend's OpenMP. Meson must be >= 1.0, which
# rules out Ubuntu 22.04 (0.61).
packages() {
    os=$(sed -n 's/^ID=//p' /etc/os-release | tr -d '"'):$(sed -n 's/^VERSION_ID=//p' /etc/os-release | tr -d '"')
    case "$1:$os" in
    build:debian:12 | build:ubuntu:24.04)
        echo "gcc g++ libc6-dev pkg-config meson ninja-build libcjson-dev libpcre2-dev libmicrohttpd-dev" ;;
    runtime:debian:12) echo "libcjson1 libpcre2-8-0 libmicrohttpd12 libgomp1 tini curl" ;;
    runtime:ubuntu:24.04) echo "libcjson1 libpcre2-8-0 libmicrohttpd12t64 libgomp1 tini curl" ;;
    build:* | runtime:*) fail "no package list for $os (there are lists for debian:12 and ubuntu:24.04)" ;;
    *) usage ;;
    esac
}

# install_packages build|runtime: installs those not installed yet (none, on a machine set up by install-deps.sh).
install_packages() {
    list=$(packages "$1")
    set --
    for p in $list; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            set -- "$@" "$p"
        fi
    done
    [ $# -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] || fail "run as root to install: $*"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

build() {
    src=$1 dir=$2 prefix=$3 archs=$4
    # nvcc is in /usr/local/cuda/bin in the CUDA images, outside PATH.
    if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
        PATH="$PATH:/usr/local/cuda/bin"
        export PATH
    fi
    # cuda=enabled: an image without the CUDA backend must fail to build, not serve on the CPU.
    # werror=false: a newer compiler than CI's gcc 12 (Ubuntu 24.04 has gcc 13) may warn about more; that must not
    # fail a user's build. CI's own build keeps -Werror.
    meson setup "$dir" "$src" --prefix "$prefix" --buildtype release -Dwerror=false -Dcuda=enabled \
        "-Dcuda-arch=$archs"
    # Only what `meson install` installs is compiled, not the tests and benchmarks (Meson depends on Python).
    set --
    for target in $(meson introspect --targets "$dir" | python3 -c 'import json, os, sys
for t in json.load(sys.stdin):
    if t["installed"]:
        print(" ".join(os.path.relpath(f, sys.argv[1]) for f in t["filename"]))' "$dir"); do
        set -- "$@" "$target"
    done
    [ $# -gt 0 ] || fail "meson introspect lists no installed targets"
    ninja -C "$dir" "$@"
    meson install -C "$dir" --no-rebuild
    rm -rf "$prefix/share/flashkernel/demo-model"
    mkdir -p "$prefix/share/flashkernel"
    cp -RL "$src/deploy/demo-model" "$prefix/share/flashkernel/demo-model"
    # The installed binary must load its libraries and run.
    "$prefix/bin/flashkernel-server" --help >/dev/null
    echo "docker-build-steps: installed into $prefix (CUDA architectures $archs)"
}

case "${1:-}" in
build-deps)
    [ $# -eq 1 ] || usage
    install_packages build
    ;;
build)
    [ $# -eq 5 ] || usage
    build "$2" "$3" "$4" "$5"
    ;;
runtime-deps)
    [ $# -eq 1 ] || usage
    install_packages runtime
    ;;
packages)
    [ $# -eq 2 ] || usage
    packages "$2"
    ;;
*)
    usage
    ;;
esac
