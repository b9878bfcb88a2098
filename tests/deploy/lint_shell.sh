#!/bin/bash
# lint_shell.sh — shellcheck (Debian's) on deploy/*.sh and on these tests: no finding of any level.
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/../smoke/lib.sh"

command -v shellcheck >/dev/null || fail "shellcheck is missing (deploy/install-deps.sh installs it)"
cd "$FK_SOURCE_ROOT"
scripts=(deploy/*.sh)
tests=(tests/deploy/*.sh)
[ "${#scripts[@]}" -ge 6 ] || fail "found only ${scripts[*]}"
[ "${#tests[@]}" -ge 5 ] || fail "found only ${tests[*]}"
shellcheck "${scripts[@]}" || fail "shellcheck findings in deploy/"
# The tests source tests/smoke/lib.sh: shellcheck reads it (-x) for the names it defines, as bash.
shellcheck -x -s bash "${tests[@]}" || fail "shellcheck findings in tests/deploy/"
echo "shellcheck: ${#scripts[@]} scripts in deploy/ and ${#tests[@]} in tests/deploy/ are clean"
