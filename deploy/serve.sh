#!/bin/sh
# serve.sh — sets up FlashKernel on a fresh Debian 12 machine and serves the bundled demo model over HTTP on
# http://localhost:8080: the README's first command. Extra arguments go to flashkernel-server (--port, --host 0.0.0.0,
# --model DIR, ...; --help lists them). Stop it with Ctrl-C.
set -eu
cd "$(dirname "$0")/.."
deploy/build.sh build
exec build/server/flashkernel-server "$@"
