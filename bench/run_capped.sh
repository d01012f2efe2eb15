#!/usr/bin/env bash
# Runs a command inside a fresh memory cgroup capped at SIZE, the way a machine with less RAM than
# the model would run it, then removes the cgroup. Needs root. Works with cgroup v2 (memory.max)
# and v1 (memory.limit_in_bytes; there the page cache counts against the cap too).
#
#   bench/run_capped.sh SIZE COMMAND [ARG...]
#   bench/run_capped.sh 1730M build/k3 bench -m bench.gguf -p 64 -n 32
#   bench/run_capped.sh 58%:bench.gguf build/k3 bench -m bench.gguf     # 58% of that file's size
#
# SIZE: bytes with an optional K/M/G suffix (powers of 1024), or P%:FILE. The page cache is
# dropped first so every run starts cold. Prints the cap and the cgroup's peak usage on stderr.
set -euo pipefail

if [[ $# -lt 2 || $1 == -h || $1 == --help ]]; then
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
size=$1
shift

if [[ $size =~ ^([0-9]+(\.[0-9]+)?)%:(.+)$ ]]; then
    file_bytes=$(stat -L -c %s "${BASH_REMATCH[3]}")
    cap=$(awk -v p="${BASH_REMATCH[1]}" -v b="$file_bytes" 'BEGIN { printf "%d", b * p / 100 }')
elif [[ $size =~ ^([0-9]+)([KMG]?)$ ]]; then
    case ${BASH_REMATCH[2]} in
        K) cap=$((BASH_REMATCH[1] << 10)) ;;
        M) cap=$((BASH_REMATCH[1] << 20)) ;;
        G) cap=$((BASH_REMATCH[1] << 30)) ;;
        *) cap=${BASH_REMATCH[1]} ;;
    esac
else
    echo "run_capped: bad SIZE '$size' (want e.g. 1730M, 2G or 58%:model.gguf)" >&2
    exit 2
fi

name=k3-capped-$$
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then  # v2
    group=/sys/fs/cgroup/$name
    mkdir "$group"
    echo "$cap" > "$group/memory.max"
    echo 0 > "$group/memory.swap.max" 2>/dev/null || true
    peak_file=$group/memory.peak
else  # v1
    group=/sys/fs/cgroup/memory/$name
    mkdir "$group"
    echo "$cap" > "$group/memory.limit_in_bytes"
    peak_file=$group/memory.max_usage_in_bytes
fi
cleanup() { rmdir "$group" 2>/dev/null || true; }
trap cleanup EXIT

sync
echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || echo "run_capped: could not drop the page cache" >&2
echo "run_capped: cap $cap bytes ($((cap >> 20)) MiB) in $group" >&2
status=0
bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' capped "$group" "$@" || status=$?
[[ -r $peak_file ]] && echo "run_capped: peak usage $(($(cat "$peak_file") >> 20)) MiB, exit $status" >&2
exit "$status"
