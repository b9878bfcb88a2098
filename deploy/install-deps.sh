#!/bin/sh
# install-deps.sh — installs what FlashKernel needs to build and test, from Debian 12 packages.
# Installs only what is missing; uses sudo when not run as root.
set -eu

# clang, libclang-rt-14-dev (libFuzzer) and libomp-dev: the fuzz build that tests/run-all.sh runs briefly.
# libmicrohttpd-dev: the HTTP server. curl, jq, prometheus (promtool), python3-venv (the `openai` client): the
# server's smoke tests. g++: nvcc's host compiler. python3-yaml, shellcheck, systemd (systemd-analyze), nginx, tini:
# the deploy tests (tests/deploy: the manifests' checks, nginx in front of two servers, the image's entrypoint);
# git: the Dockerfile check lists the tracked files (git ls-files) to compare them with the build context.
# unicode-data, bzip2: the Unicode Character Database, whose NormalizationTest.txt.bz2 checks the NFC normalizer
# (tests/unit/test_unicode_nfc.c) and from which tools/gen_unicode_nfc.py made its tables.
PACKAGES="git gcc g++ libc6-dev pkg-config meson ninja-build libcjson-dev libcmocka-dev libpcre2-dev clang
libclang-rt-14-dev libomp-dev libmicrohttpd-dev curl jq prometheus python3-venv
python3-yaml shellcheck systemd nginx tini unicode-data bzip2"

set --
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        set -- "$@" "$p"
    fi
done
[ $# -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: $*" >&2; exit 1; }
    SUDO=sudo
fi
# Packages with a service (nginx, prometheus) start it when installed, and nginx's fails to install when port 80
# is taken. The tests start their own instances, so a policy-rc.d that forbids every start (exit 101, Debian's
# invoke-rc.d policy interface) is in place during the install, unless the system already has one.
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod 755 /usr/sbin/policy-rc.d
    trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
echo "install-deps: installing $*"
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
