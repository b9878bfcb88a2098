#!/bin/bash
# ubuntu_image.sh — deploy/Dockerfile as close to `docker build` and `docker run` as a machine without a Docker
# engine gets: each stage is an Ubuntu chroot (debootstrap) of the image's Ubuntu release, with this machine's CUDA
# toolkit bound in where the nvidia/cuda images have theirs. The Dockerfile's steps run in their stages (the
# Ubuntu package names, Meson and gcc of that release), its other RUN lines and COPY --from follow, and the image's
# USER, ENV, ENTRYPOINT and CMD serve the demo model (CPU) in the final stage: its HEALTHCHECK passes from inside,
# a request gets the text of `flashkernel generate`, SIGTERM drains and exits 0.
# Not part of `meson test`: it needs root, debootstrap, archive.ubuntu.com and about 600 MB in $TMPDIR.
# usage: tests/deploy/ubuntu_image.sh [BUILD_DIR]    (as root; BUILD_DIR has the reference `flashkernel`, default build)
set -eu
cd "$(dirname "$0")/../.."
SRC=$PWD
CLI=$SRC/${1:-build}/tools/flashkernel
CUDA=$(realpath /usr/local/cuda)
[ "$(id -u)" = 0 ] || { echo "ubuntu_image: run as root (chroot, mount)" >&2; exit 1; }
[ -x "$CLI" ] || { echo "ubuntu_image: no $CLI: build first (deploy/build.sh)" >&2; exit 1; }
[ -x "$CUDA/bin/nvcc" ] || { echo "ubuntu_image: no CUDA toolkit at /usr/local/cuda" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "ubuntu_image: apt-get install debootstrap" >&2; exit 1; }

DIR=$(mktemp -d "${TMPDIR:-/tmp}/fk-ubuntu-XXXXXX")
PID=""
# The chroots have this machine's /dev and CUDA toolkit bound in: the directory is removed only once nothing is
# mounted under it, and never across a file system boundary.
cleanup() {
    set +e
    [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null
    for stage in build final; do
        for m in usr/local/cuda dev proc; do
            mountpoint -q "$DIR/$stage/$m" && umount "$DIR/$stage/$m"
        done
    done
    if grep -q " $DIR/" /proc/mounts; then
        echo "ubuntu_image: still mounted under $DIR; not removing it" >&2
        return
    fi
    rm -rf --one-file-system "$DIR"
}
trap cleanup EXIT

step() { echo "== $*"; }
fail() {
    echo "FAIL: $*" >&2
    [ -f "$DIR/server.log" ] && tail -n 20 "$DIR/server.log" >&2
    exit 1
}
# inside STAGE COMMAND...: runs COMMAND as root in the stage's chroot with a clean environment.
inside() {
    local stage=$1
    shift
    chroot "$DIR/$stage" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"
}

python3 "$SRC/tests/deploy/dockerfile.py" plan deploy/Dockerfile /src "" >"$DIR/plan.json"
release=$(sed -n 's/^ARG UBUNTU_VERSION=//p' deploy/Dockerfile)
case "$release" in
24.04) suite=noble ;;
*) fail "no Ubuntu suite name known for $release" ;;
esac

step "Ubuntu $release ($suite) for both stages"
# --no-check-gpg: Debian has no Ubuntu archive keyring package; the chroots are thrown away at the end. Debian 12's
# debootstrap has no script for noble: every Ubuntu suite's script is gutsy's.
script=/usr/share/debootstrap/scripts/$suite
[ -e "$script" ] || script=/usr/share/debootstrap/scripts/gutsy
debootstrap --no-check-gpg --variant=minbase --components=main,universe "$suite" "$DIR/base" \
    http://archive.ubuntu.com/ubuntu "$script" >"$DIR/debootstrap.log" 2>&1 ||
    { tail "$DIR/debootstrap.log"; fail debootstrap; }
# As in the ubuntu:24.04 image: updates and security too.
printf 'deb http://archive.ubuntu.com/ubuntu %s-updates main universe\ndeb http://security.ubuntu.com/ubuntu %s-security main universe\n' \
    "$suite" "$suite" >>"$DIR/base/etc/apt/sources.list"
for stage in build final; do
    cp -a "$DIR/base" "$DIR/$stage"
    mount -t proc proc "$DIR/$stage/proc"
    mount --bind /dev "$DIR/$stage/dev"
    # The nvidia/cuda images have the toolkit (devel) or its libraries (runtime) in /usr/local/cuda and on the
    # loader's path.
    mkdir -p "$DIR/$stage/usr/local/cuda"
    mount --bind "$CUDA" "$DIR/$stage/usr/local/cuda"
    echo /usr/local/cuda/lib64 >"$DIR/$stage/etc/ld.so.conf.d/988_cuda.conf"
    inside "$stage" ldconfig
    # The build context at /src: COPY . /src in the build stage, the bind-mounted script in the final one.
    mkdir -p "$DIR/$stage/src"
    git archive HEAD | tar -x -C "$DIR/$stage/src"
done

final=$(jq '[.steps[].stage] | max' "$DIR/plan.json")
for i in $(seq 0 $(($(jq '.steps | length' "$DIR/plan.json") - 1))); do
    mapfile -t argv < <(jq -r ".steps[$i].argv[]" "$DIR/plan.json")
    stage=build
    [ "$(jq ".steps[$i].stage" "$DIR/plan.json")" = "$final" ] && stage=final
    step "$stage stage: ${argv[*]}"
    inside "$stage" "${argv[@]}" >"$DIR/step$i.log" 2>&1 || { tail -n 30 "$DIR/step$i.log"; fail "step $i"; }
done
grep -h "warning:" "$DIR"/step*.log && fail "compiler warnings on Ubuntu $release"
rm -rf "$DIR/final/src"

step "final stage: the other RUN lines, COPY --from=build, USER, ENV, ENTRYPOINT, CMD"
while read -r cmd; do
    inside final sh -c "$cmd" || fail "RUN $cmd"
done < <(jq -r '.setup[]' "$DIR/plan.json")
while read -r dest src; do
    mkdir -p "$(dirname "$DIR/final$dest")"
    cp -a "$DIR/build$src" "$DIR/final$dest"
done < <(jq -r '.copies | to_entries[] | "\(.key) \(.value)"' "$DIR/plan.json")
mapfile -t envs < <(jq -r '.env | to_entries[] | "\(.key)=\(.value)"' "$DIR/plan.json")
mapfile -t run < <(jq -r '.entrypoint[], .cmd[]' "$DIR/plan.json")
user=$(jq -r .user "$DIR/plan.json")
# Listening on a free port of 127.0.0.1 (later flags win): the chroot shares this machine's network.
chroot --userspec="$user" "$DIR/final" env -i PATH=/usr/bin:/bin "${envs[@]}" OMP_WAIT_POLICY=passive \
    "${run[@]}" --host 127.0.0.1 --port 0 >"$DIR/server.log" 2>&1 &
PID=$!
for _ in $(seq 1 300); do
    port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$DIR/server.log")
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { cat "$DIR/server.log"; fail "the server did not start"; }
health=$(jq -r .healthcheck "$DIR/plan.json" | sed "s/127\.0\.0\.1:8080/127.0.0.1:$port/")
for _ in $(seq 1 100); do
    inside final sh -c "$health" 2>/dev/null && break
    sleep 0.1
done
inside final sh -c "$health" || fail "the HEALTHCHECK fails: $health"
echo "HEALTHCHECK passes: $health"

prompt="ROMEO:"
got=$(curl -s "127.0.0.1:$port/generate" -d "{\"prompt\": \"$prompt\", \"max_tokens\": 24}" | jq -r .text)
want=$("$CLI" generate --device cpu --prompt "$prompt" --max-tokens 24 --json 2>/dev/null | jq -r .text)
[ "$got" = "$want" ] || fail "the image's server says \"$got\", flashkernel generate \"$want\""
echo "generate: the text of flashkernel generate"

curl -sN "127.0.0.1:$port/generate" -d '{"prompt": "JULIET:", "max_tokens": 600, "ignore_eos": true, "stream": true}' \
    >"$DIR/stream.txt" &
stream=$!
sleep 0.3
kill -TERM "$PID"
wait "$stream"
tail -n 2 "$DIR/stream.txt" | grep -qx 'data: \[DONE\]' || fail "the stream did not finish during the drain"
code=0
wait "$PID" || code=$?
PID=""
[ "$code" = 0 ] || fail "exit status $code after SIGTERM"
grep "exiting with status 0" "$DIR/server.log"
echo "ubuntu_image: ok"
