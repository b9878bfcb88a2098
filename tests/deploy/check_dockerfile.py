#!/usr/bin/env python3
"""check_dockerfile.py — deploy/Dockerfile's rules, checked without a Docker engine (hadolint is not in Debian):
multi-stage from matching CUDA devel and runtime images, every build step in deploy/docker-build-steps.sh, a numeric
non-root USER, a HEALTHCHECK on /health at the served port, exec-form ENTRYPOINT and CMD through tini so that
SIGTERM reaches the server, a --shutdown-timeout that fits in docker stop's grace period, the CUDA architectures of
meson_options.txt with sm_75 (T4), and a .dockerignore that keeps every tracked file in the build context.
usage: check_dockerfile.py [SOURCE_ROOT]   (default: $FK_SOURCE_ROOT)
"""
import fnmatch
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dockerfile  # noqa: E402
from checks import check, finish, flag  # noqa: E402

# `docker stop` waits 10 s by default before SIGKILL. The server drains for --shutdown-timeout, then takes up to a
# second for the last responses (docs/ARCHITECTURE.md, "Shutdown"); 2 s more for freeing the engine and exiting.
DOCKER_STOP_GRACE = 10
MARGIN = 3
SERVER = "/opt/flashkernel/bin/flashkernel-server"


def ignored(path, patterns):
    """Whether a .dockerignore pattern (relative to the context, `**` for any directories) excludes `path` or a
    directory it is in."""
    def match(pat, parts):
        if not pat:
            return True  # the pattern matched a directory holding the path
        if not parts:
            return False
        if pat[0] == "**":
            return any(match(pat[1:], parts[i:]) for i in range(len(parts) + 1))
        return fnmatch.fnmatchcase(parts[0], pat[0]) and match(pat[1:], parts[1:])
    parts = path.split("/")
    return any(match(p.strip("/").split("/"), parts) for p in patterns)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.environ["FK_SOURCE_ROOT"]
    path = os.path.join(root, "deploy", "Dockerfile")
    instructions = dockerfile.parse(path)
    stages, global_args = dockerfile.stages(instructions)
    args = dockerfile.arg_defaults(global_args)

    with open(path, encoding="utf-8") as f:
        check(f.readline().strip() == "# syntax=docker/dockerfile:1",
              "first line: # syntax=docker/dockerfile:1 (RUN --mount needs BuildKit's Dockerfile syntax 1.2+)")

    # Stages: build on the CUDA devel image, run on the runtime image of the same CUDA and Ubuntu.
    if not check(len(stages) >= 2, "multi-stage: %d stage(s)" % len(stages)):
        return
    build_name, build_base, build_body = stages[0]
    _, final_base, final_body = stages[-1]
    build_image = dockerfile.expand(build_base, args)
    final_image = dockerfile.expand(final_base, args)
    m = re.fullmatch(r"nvidia/cuda:([\d.]+)-devel-(ubuntu[\d.]+)", build_image)
    check(m is not None, "the build stage starts from nvidia/cuda:<version>-devel-ubuntu<version>, not %s"
          % build_image)
    check(build_name is not None, "the build stage is named (FROM ... AS build)")
    if m:
        want = "nvidia/cuda:%s-runtime-%s" % m.groups()
        check(final_image == want, "the final stage starts from %s (same CUDA and Ubuntu), not %s"
              % (want, final_image))

    # Every package installation and compilation is in docker-build-steps.sh, which CI runs.
    for _, _, body in stages:
        for ins in body:
            if ins.name != "RUN":
                continue
            _, rest = ins.flags()
            check("docker-build-steps.sh" in rest or rest.startswith("groupadd "),
                  "line %d: a RUN that is neither docker-build-steps.sh nor groupadd/useradd: %s" % (ins.line, rest))
            check(not re.search(r"\b(apt-get|apt|meson|ninja|make|gcc|nvcc)\b", rest.split("&&")[0]),
                  "line %d: builds or installs outside docker-build-steps.sh: %s" % (ins.line, rest))
    try:
        plan = dockerfile.plan(path, root, "/ROOT")
    except (ValueError, KeyError) as e:
        check(False, str(e))
        return
    called = [(step["stage"], step["argv"][1]) for step in plan["steps"] if len(step["argv"]) > 1]
    last = len(stages) - 1
    check(called == [(0, "build-deps"), (0, "build"), (last, "runtime-deps")],
          "docker-build-steps.sh steps build-deps and build in the build stage, runtime-deps in the final one: %s"
          % called)

    # The final stage: only what the build stage made, a non-root numeric user.
    for ins in final_body:
        flags, rest = ins.flags()
        if ins.name in ("COPY", "ADD"):
            check(flags.get("from") == [build_name],
                  "line %d: the final stage copies only from the build stage: %s" % (ins.line, ins.args))
    users = [ins.args for ins in final_body if ins.name == "USER"]
    if check(len(users) == 1, "one USER in the final stage (found %d)" % len(users)):
        uid, _, gid = users[0].partition(":")
        check(uid.isdigit() and int(uid) != 0 and gid.isdigit(),
              "USER is a numeric non-root UID:GID (Kubernetes' runAsNonRoot can only check a number): %s" % users[0])
        adds = " ".join(ins.args for ins in final_body if ins.name == "RUN" and "useradd " in ins.args)
        check(re.search(r"useradd .*--uid %s --gid %s " % (uid, gid), adds) and
              re.search(r"groupadd --gid %s " % gid, adds),
              "USER %s is the user and group that groupadd and useradd create: %s" % (users[0], adds))

    # Entrypoint: tini, then the server with the flags every container needs, in exec form; CMD in exec form.
    raw_entry = [i.json_args() for i in final_body if i.name == "ENTRYPOINT"][-1]
    check(raw_entry[:3] == ["/usr/bin/tini", "--", SERVER],
          "ENTRYPOINT starts [\"/usr/bin/tini\", \"--\", \"%s\"] (tini passes SIGTERM on): %s" % (SERVER, raw_entry))
    argv = raw_entry[3:] + plan["cmd"]  # the server's flags
    check(plan["cmd"] and len(plan["entrypoint"]) > 3, "ENTRYPOINT and CMD in exec form")
    check(flag(plan["cmd"], "--served-model-name") == "demo-model",
          "CMD names the bundled model demo-model (the docs' model name): %s" % plan["cmd"])
    stop = [i.args for i in final_body if i.name == "STOPSIGNAL"]
    check(stop in ([], ["SIGTERM"], ["SIGINT"]), "STOPSIGNAL is SIGTERM or SIGINT (the server drains on those): %s"
          % stop)
    port = flag(argv, "--port")
    check(flag(argv, "--host") == "0.0.0.0", "the server listens on 0.0.0.0 (reachable through Docker's port mapping)")
    check(port is not None and port in plan["expose"], "the server's --port %s is EXPOSEd (%s)"
          % (port, plan["expose"]))
    timeout = flag(argv, "--shutdown-timeout")
    check(timeout is not None and float(timeout) + MARGIN <= DOCKER_STOP_GRACE,
          "the server's --shutdown-timeout (%s) + %d s fits in docker stop's default %d s"
          % (timeout, MARGIN, DOCKER_STOP_GRACE))

    # HEALTHCHECK on /health at the served port, with time to load the model.
    health = [i for i in final_body if i.name == "HEALTHCHECK"]
    if check(len(health) == 1, "one HEALTHCHECK in the final stage"):
        flags, _ = health[0].flags()
        check("start-period" in flags, "HEALTHCHECK has a --start-period (the model loads first)")
        check(re.search(r"http://(127\.0\.0\.1|localhost):%s/health\b" % port, plan["healthcheck"] or ""),
              "HEALTHCHECK requests /health on port %s: %s" % (port, plan["healthcheck"]))

    # The model: /models, the bundled demo model unless a directory is mounted there.
    env = {}
    for ins in final_body:
        if ins.name == "ENV":
            env.update(dict(p.partition("=")[::2] for p in ins.args.split()))
    check(env.get("FLASHKERNEL_MODEL") == "/models", "ENV FLASHKERNEL_MODEL=/models")
    check(any(i.name == "COPY" and i.flags()[1].split()[-1] == "/models" for i in final_body),
          "the demo model is copied to /models")

    # CUDA architectures: the meson default (sm_75 for the T4 among them), and passed to the build step.
    build_args = dockerfile.arg_defaults(build_body)
    archs = build_args.get("CUDA_ARCHS", "")
    with open(os.path.join(root, "meson_options.txt"), encoding="utf-8") as f:
        m = re.search(r"option\('cuda-arch'.*?value\s*:\s*\[([^\]]*)\]", f.read(), re.S)
    meson_archs = ",".join(re.findall(r"'([^']+)'", m.group(1))) if m else None
    check("sm_75" in archs.split(","), "CUDA_ARCHS has sm_75 (T4): %s" % archs)
    check(archs == meson_archs, "CUDA_ARCHS %s is meson_options.txt's cuda-arch default %s" % (archs, meson_archs))
    check(any(step["argv"][1:2] == ["build"] and step["argv"][-1] == archs for step in plan["steps"]),
          "the build step gets CUDA_ARCHS")

    # The build context: BuildKit reads deploy/Dockerfile.dockerignore; it may leave out build outputs only.
    with open(os.path.join(root, "deploy", "Dockerfile.dockerignore"), encoding="utf-8") as f:
        patterns = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    tracked = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True,
                             text=True).stdout.split()
    check(len(tracked) > 100, "git ls-files lists the tree (%d files)" % len(tracked))
    left_out = [p for p in tracked if ignored(p, patterns)]
    check(not left_out, "Dockerfile.dockerignore leaves tracked files out of the context: %s" % left_out[:5])
    check(ignored("build/server/flashkernel-server", patterns) and ignored(".git/HEAD", patterns),
          "Dockerfile.dockerignore leaves out build directories and .git")


if __name__ == "__main__":
    main()
    finish("check_dockerfile")
