#!/bin/sh
# Stand-in for turbostat in exec.fio (tests/data/fio-jobs/cpuexec): prints
# its arguments on stdout and a line on stderr, then waits to be ended.
# SIGTERM is trapped and said on both streams. `--exit N` first: exits N at
# once; `--ignore-term` first: says SIGTERM and goes on (SIGKILL ends it).
# With MONITOR_PID_DIR set, leaves a file named by its pid there.
echo "args: $*"
echo "monitor started" >&2
[ -n "${MONITOR_PID_DIR:-}" ] && : > "$MONITOR_PID_DIR/$$"
case "${1:-}" in
    --exit) exit "$2" ;;
    --ignore-term) trap 'echo "SIGTERM ignored"' TERM ;;
    *) trap 'echo "SIGTERM"; echo "SIGTERM" >&2; exit 0' TERM ;;
esac
while :; do sleep 0.1; done
