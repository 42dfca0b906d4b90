#!/usr/bin/env bash
# Front-end speed: analyse a source tree of at least 10,000 lines (copies of the examples) and
# print the wall time of each of 5 runs, min and median. Target: under 1 s.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MPICAST:-target/release/mpicast}
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
lines=0; k=0
while [ "$lines" -lt 10000 ]; do
  for f in examples/*.c; do
    cp "$f" "$tree/$(basename "$f" .c)_$k.c"
    lines=$((lines + $(wc -l < "$f")))
  done
  k=$((k + 1))
done
files=$(ls "$tree" | wc -l)
times=()
for _ in 1 2 3 4 5; do
  s=$(date +%s.%N)
  "$bin" analyze "$tree" --summary > /dev/null 2>&1
  e=$(date +%s.%N)
  times+=("$(awk -v a="$s" -v b="$e" 'BEGIN{print b-a}')")
done
sorted=$(printf '%s\n' "${times[@]}" | sort -g)
min=$(echo "$sorted" | head -1); med=$(echo "$sorted" | sed -n 3p)
printf 'analyze: %d lines in %d files, 5 runs: min %.3f s, median %.3f s (target < 1 s)\n' "$lines" "$files" "$min" "$med"
