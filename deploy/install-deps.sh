#!/bin/sh
# install-deps.sh — installs what FlashKernel needs to build and test, from Debian 12 packages.
# Installs only what is missing; uses sudo when not run as root.
set -eu

# clang, libclang-rt-14-dev (libFuzzer) and libomp-dev: the fuzz build that tests/run-all.sh runs briefly.
# libmicrohttpd-dev: the HTTP server. curl, jq, prometheus (promtool), python3-venv (the `openai` client): the
# server's smoke tests.
PACKAGES="gcc libc6-dev pkg-config meson ninja-build libcjson-dev libcmocka-dev libpcre2-dev clang libclang-rt-14-dev libomp-dev
libmicrohttpd-dev curl jq prometheus python3-venv"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install:$missing" >&2; exit 1; }
    SUDO=sudo
fi
echo "install-deps: installing$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
