#!/bin/sh
# trim-llama-tarball.sh SRC DEST — ../shared/peers' llama.cpp source without the parts its peer build never compiles
# (tools/ui/src, tools/ui/docs, tools/ui/package-lock.json: the web UI's sources, off with -DLLAMA_BUILD_UI=OFF;
# tools/mtmd/test-*.{jpeg,mp3,mp4}: test media). 4.16 MB → 2.79 MB, so that it travels in one device call's 64 MiB
# (counted as a tar: the tracked tree is ~59.5 MiB) with .peers; still not beside .deps (see call2.sh). cmake
# configures it and llama-ui builds (checked here); the thirty-third session's call 2 built every peer target from it.
#   usage: trim-llama-tarball.sh ../shared/peers/llama.cpp-18ef86ece-src.tar.xz .peers/llama.cpp-18ef86ece-src.tar.xz
set -eu
src=$1; dest=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
tar -xJf "$src" -C "$tmp"
rm -rf "$tmp/tools/ui/src" "$tmp/tools/ui/docs" "$tmp/tools/ui/package-lock.json" \
    "$tmp/tools/mtmd/test-1.jpeg" "$tmp/tools/mtmd/test-2.mp3" "$tmp/tools/mtmd/test-3.mp4"
(cd "$tmp" && tar cf - -- *) | xz -9e -T4 >"$dest"
ls -l "$dest"
