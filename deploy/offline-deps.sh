#!/bin/sh
# offline-deps.sh — FlashKernel's library dependencies for a host with no package access (the GPU host).
#   deploy/offline-deps.sh download DIR         here, where apt works: fetch the Debian 12 .deb files into DIR
#   deploy/offline-deps.sh unpack DIR PREFIX    there: unpack them into PREFIX (no root, no dpkg database)
# Then build with: meson setup BUILD -Ddep_prefix=PREFIX   and run with LD_LIBRARY_PATH=PREFIX/usr/lib/x86_64-linux-gnu
set -eu

PACKAGES="libcjson1 libcjson-dev libcmocka0 libcmocka-dev libpcre2-8-0 libpcre2-dev libmicrohttpd12 libmicrohttpd-dev"

usage() {
    sed -n '2,5p' "$0" | sed 's/^# //' >&2
    exit 2
}

case "${1:-}" in
download)
    [ $# -eq 2 ] || usage
    mkdir -p "$2"
    cd "$2"
    apt-get update -qq >/dev/null 2>&1 || echo "offline-deps: apt-get update failed; using the cached lists" >&2
    # apt-get download fetches exactly these packages (no dependencies: the libraries need only glibc, and
    # gnutls for libmicrohttpd, which CUDA images carry).
    set --
    for p in $PACKAGES; do
        set -- "$@" "$p"
    done
    apt-get download "$@"
    ls -1 -- *.deb
    ;;
unpack)
    [ $# -eq 3 ] || usage
    mkdir -p "$3"
    n=0
    for deb in "$2"/*.deb; do
        dpkg-deb -x "$deb" "$3"
        n=$((n + 1))
    done
    # -dev packages ship the unversioned .so as a link into /usr/lib; make the links relative to the prefix.
    for link in "$3"/usr/lib/x86_64-linux-gnu/*.so; do
        [ -L "$link" ] && ln -sf "$(basename "$(readlink "$link")")" "$link"
    done
    echo "offline-deps: unpacked $n packages into $3"
    ;;
*)
    usage
    ;;
esac
