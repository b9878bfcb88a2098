"""checks.py — what check_dockerfile.py and check_manifests.py share: counting checks and failures, a flag's value in
an argv list, and the summary and exit status."""
import sys

failures = []
count = 0


def check(ok, what):
    """Counts one check; records `what` (the rule, with what was found) when it does not hold."""
    global count
    count += 1
    if not ok:
        failures.append(what)
    return ok


def flag(words, name):
    """The value given to `name` in an argv list (the server takes the last one), or None."""
    words = [str(w) for w in words]
    at = [i for i, w in enumerate(words[:-1]) if w == name]
    return words[at[-1] + 1] if at else None


def finish(name):
    """Prints the failures and a summary line; exits 1 when a check failed or none ran."""
    for f in failures:
        print("FAIL:", f)
    print("%s: %d checks, %d failed" % (name, count, len(failures)))
    sys.exit(1 if failures or count == 0 else 0)
