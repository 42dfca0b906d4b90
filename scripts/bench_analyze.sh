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

# A generated file of 20,000 small functions (about 2 MB): analysis time and peak memory.
# Targets: < 10 s, < 1 GiB.
gen=$tree/gen
mkdir -p "$gen"
python3 - "$gen" <<'PY'
import sys, os
d = sys.argv[1]
with open(os.path.join(d, "many_functions.c"), "w") as f:
    f.write("#include <mpi.h>\n")
    for i in range(20000):
        f.write(f"static int f{i}(int x) {{ int s = 0; for (int k = 0; k < x; k++) s += k * {i % 7 + 1}; return s + {i}; }}\n")
    f.write("int main(int argc, char **argv) { int t = 0; MPI_Init(&argc, &argv);\n")
    for i in range(0, 20000, 97):
        f.write(f"  t += f{i}(10);\n")
    f.write("  MPI_Finalize(); return t > 0 ? 0 : 1; }\n")
# A multi-file program of about 20,000 lines: 20 files of kernels called from a time-step loop
# with a halo exchange, predicted statically.
tree = os.path.join(d, "multi")
os.makedirs(tree)
for k in range(20):
    with open(os.path.join(tree, f"kern{k}.c"), "w") as f:
        for j in range(33):
            f.write(f"void kern{k}_{j}(int n, double *a)\n{{\n")
            for r in range(13):
                f.write(f"    for (int i = 0; i < n; i++)\n        a[i] = a[i] * 0.5 + {r}.0;\n")
            f.write("}\n\n")
with open(os.path.join(tree, "main.c"), "w") as f:
    f.write("#include <mpi.h>\n#include <stdlib.h>\n")
    for k in range(20):
        for j in range(33):
            f.write(f"void kern{k}_{j}(int n, double *a);\n")
    f.write("int main(int argc, char **argv)\n{\n    int rank, size, n = atoi(argv[1]), steps = atoi(argv[2]);\n")
    f.write("    MPI_Init(&argc, &argv);\n    MPI_Comm_rank(MPI_COMM_WORLD, &rank);\n    MPI_Comm_size(MPI_COMM_WORLD, &size);\n")
    f.write("    double *a = calloc(n, sizeof(double));\n    for (int s = 0; s < steps; s++) {\n")
    for k in range(20):
        for j in range(0, 33, 3):
            f.write(f"        kern{k}_{j}(n, a);\n")
    f.write("        MPI_Sendrecv_replace(a, 16, MPI_DOUBLE, (rank + 1) % size, 0, (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n")
    f.write("    }\n    MPI_Finalize();\n    return 0;\n}\n")
PY
five() { # five runs of "$@": prints "min median peak_kib"
  local ts=() peak=0 s e m
  for _ in 1 2 3 4 5; do
    s=$(date +%s.%N)
    /usr/bin/time -o "$tree/time.out" -f '%M' "$@" > /dev/null 2>&1 || true
    m=$(tail -1 "$tree/time.out")
    e=$(date +%s.%N)
    ts+=("$(awk -v a="$s" -v b="$e" 'BEGIN{print b-a}')")
    [ "${m:-0}" -gt "$peak" ] && peak=$m
  done
  local sorted; sorted=$(printf '%s\n' "${ts[@]}" | sort -g)
  echo "$(echo "$sorted" | head -1) $(echo "$sorted" | sed -n 3p) $peak"
}
read -r min med peak < <(five "$bin" analyze "$gen/many_functions.c" --summary)
printf 'analyze: 20,000 functions (%d KB), 5 runs: min %.3f s, median %.3f s, peak %d MiB (targets < 10 s, < 1 GiB)\n' \
  "$(( $(wc -c < "$gen/many_functions.c") / 1024 ))" "$min" "$med" "$((peak / 1024))"
mlines=$(cat "$gen/multi"/*.c | wc -l)
read -r min med peak < <(five "$bin" predict "$gen/multi" -n 4 --static-only --machine tests/fixtures/machine/fixed.json \
  --platform platforms/localhost.xml -- 100000 10)
printf 'predict --static-only: %d lines in 21 files at 4 ranks, 5 runs: min %.3f s, median %.3f s, peak %d MiB (target < 2 s)\n' \
  "$mlines" "$min" "$med" "$((peak / 1024))"
