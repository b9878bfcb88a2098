#!/usr/bin/env python3
"""dockerfile.py — reads a Dockerfile the way the deploy tests need it (no Docker engine on CI): instructions with
continuation lines joined, stages, ARG defaults, and the image's run-time settings with its paths mapped onto the
machine that ran the build steps.

  dockerfile.py plan DOCKERFILE CONTEXT ROOT
      prints one JSON object: "steps", every call of docker-build-steps.sh in the Dockerfile's RUN lines, in order,
      as {"stage": index of its stage, "argv": [...]}, with ARG defaults filled in, paths from the build context
      (COPY, --mount) mapped into CONTEXT and every other absolute path into ROOT (a stand-in for the builder's file
      system); and for the final stage, with its COPY --from paths mapped to where the steps put them under ROOT:
      "entrypoint", "cmd", "env", "healthcheck" (the command line), "user", "stopsignal", "expose"; unmapped:
      "copies" ({destination: source in the build stage}) and "setup" (its other RUN commands). With ROOT "" the
      paths stay as they are in the image (for running the steps in the stages themselves).
"""
import json
import re
import shlex
import sys


class Instruction:
    def __init__(self, name, args, line):
        self.name = name    # upper case: FROM, RUN, ...
        self.args = args    # the rest of the instruction, continuation lines joined
        self.line = line    # where it starts

    def json_args(self):
        """The exec form's list (["a", "b"]), or None for the shell form."""
        if not self.args.startswith("["):
            return None
        try:
            value = json.loads(self.args)
        except ValueError:
            return None
        return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None

    def flags(self):
        """Leading --name=value options (COPY --from, RUN --mount, HEALTHCHECK --interval) and the rest."""
        words = self.args.split(" ")
        flags = {}
        while words and words[0].startswith("--"):
            name, _, value = words.pop(0)[2:].partition("=")
            flags.setdefault(name, []).append(value)
        return flags, " ".join(words).strip()


def parse(path):
    """The instructions of a Dockerfile: comments dropped (also inside continued instructions), lines ending in a
    backslash joined with the next."""
    instructions = []
    pending, start = "", 0
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if line.lstrip().startswith("#") or (not pending and not line.strip()):
                continue
            if not pending:
                start = number
            if line.endswith("\\"):
                pending += line[:-1].strip() + " "
                continue
            text = (pending + line.strip()).strip()
            pending = ""
            name, _, args = text.partition(" ")
            instructions.append(Instruction(name.upper(), args.strip(), start))
    if pending:
        raise ValueError("%s: the last instruction ends with a backslash" % path)
    return instructions


def stages(instructions):
    """[(name or None, base image, [instructions])], and the ARGs declared before the first FROM."""
    result, global_args = [], []
    for ins in instructions:
        if ins.name == "FROM":
            words = ins.args.split()
            base = [w for w in words if not w.startswith("--")][0]
            name = words[-1] if len(words) >= 3 and words[-2].upper() == "AS" else None
            result.append((name, base, []))
        elif result:
            result[-1][2].append(ins)
        else:
            global_args.append(ins)
    return result, global_args


def arg_defaults(instructions):
    """ARG NAME=default, for every ARG that has one."""
    values = {}
    for ins in instructions:
        if ins.name == "ARG" and "=" in ins.args:
            name, _, value = ins.args.partition("=")
            values[name.strip()] = value.strip().strip('"')
    return values


def expand(text, values):
    """${NAME} and $NAME replaced by the ARG defaults; an unknown name is an error."""
    def one(m):
        name = m.group(1) or m.group(2)
        if name not in values:
            raise KeyError("no default for ARG %s" % name)
        return values[name]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, text)


def map_path(word, prefixes, root):
    """A path in the image (or builder) → the same file here: the longest matching prefix of `prefixes`, else
    under ROOT for any other absolute path; other words unchanged."""
    best = None
    for image_path, here in prefixes.items():
        if word == image_path or word.startswith(image_path.rstrip("/") + "/"):
            if best is None or len(image_path) > len(best):
                best = image_path
    if best is not None:
        return prefixes[best] + word[len(best):]
    if word.startswith("/") and root is not None:
        return root + word
    return word


def plan(dockerfile, context, root):
    instructions = parse(dockerfile)
    all_stages, global_args = stages(instructions)
    values = arg_defaults(global_args)
    steps = []
    for index, (_, _, body) in enumerate(all_stages):
        stage_values = dict(values, **arg_defaults(body))
        context_paths = {}
        for ins in body:
            flags, rest = ins.flags()
            if ins.name == "COPY" and "from" not in flags:
                src, dest = rest.split()
                context_paths[dest] = context if src == "." else context + "/" + src.rstrip("/")
            if ins.name != "RUN" or "docker-build-steps.sh" not in rest:
                continue
            for mount in flags.get("mount", []):
                opts = dict(o.partition("=")[::2] for o in mount.split(","))
                if opts.get("type") == "bind":
                    context_paths[opts["target"]] = context + "/" + opts["source"]
            words = shlex.split(expand(rest, stage_values))
            # The script's own call: up to the first && or ; (what follows is image clean-up).
            call = []
            for w in words:
                if w in ("&&", ";", "||"):
                    break
                call.append(w)
            steps.append({"stage": index, "argv": [map_path(w, context_paths, root) for w in call]})
    final = all_stages[-1][2]
    settings = {"entrypoint": [], "cmd": [], "env": {}, "healthcheck": None, "user": None,
                "stopsignal": None, "expose": [], "copies": {}, "setup": []}
    copies = {}
    for ins in final:
        flags, rest = ins.flags()
        if ins.name == "COPY" and "from" in flags:
            src, dest = rest.split()
            copies[dest] = root + src
            settings["copies"][dest] = src
        elif ins.name == "RUN" and "docker-build-steps.sh" not in rest:
            settings["setup"].append(rest)
    for ins in final:
        if ins.name in ("ENTRYPOINT", "CMD"):
            words = ins.json_args()
            if words is None:
                raise ValueError("line %d: %s is not in exec form" % (ins.line, ins.name))
            settings[ins.name.lower()] = [map_path(w, copies if root else {}, None) for w in words]
        elif ins.name == "ENV":
            for pair in shlex.split(ins.args):
                name, _, value = pair.partition("=")
                settings["env"][name] = map_path(value, copies if root else {}, None)
        elif ins.name == "HEALTHCHECK":
            _, rest = ins.flags()
            settings["healthcheck"] = rest[len("CMD "):] if rest.startswith("CMD ") else rest
        elif ins.name == "USER":
            settings["user"] = ins.args
        elif ins.name == "STOPSIGNAL":
            settings["stopsignal"] = ins.args
        elif ins.name == "EXPOSE":
            settings["expose"] += ins.args.split()
    return dict(steps=steps, **settings)


def main(argv):
    if len(argv) != 5 or argv[1] != "plan":
        sys.stderr.write(__doc__)
        return 2
    print(json.dumps(plan(argv[2], argv[3].rstrip("/"), argv[4].rstrip("/"))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
