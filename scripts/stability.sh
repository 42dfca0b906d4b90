#!/usr/bin/env bash
# Stability of predictions across machine tables: measures TABLES machine tables back to back
# (`mpicast bench machine`, mpicc -O2, each under its own cache so the kernels are built once
# and nothing is reused), predicts every example statically at 1 and 2 ranks with each on the
# same platform (predict --ops compiled, the default), and the corpus's performance set (after
# `make corpus`) at 2 ranks, and prints per program and rank count the predictions and their
# spread: (max - min) / min over the tables. Target: within 3% on every program. Also prints
# each table's load from other processes (a table measured under load is expected to differ).
#
# Environment: MPICAST (binary; default ${CARGO_TARGET_DIR:-target}/release/mpicast), TABLES (2),
# QUICK (1: bench machine --quick), EXAMPLES (names, default all six), CORPUS (0: leave the corpus
# out), CORPUS_DIR (its cache), OUT_DIR (where the tables and predictions go; default
# ${CARGO_TARGET_DIR:-target}/stability), HOST_SPEED (predict's --host-speed: rescale, the default,
# checks each table against the host's speed at prediction time, so what remains between tables
# is the checks' own noise; off compares the tables as measured).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${MPICAST:-${CARGO_TARGET_DIR:-target}/release/mpicast}
[ -x "$bin" ] || { echo "stability: no mpicast binary at $bin (cargo build --release, or set MPICAST)" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
tables=${TABLES:-2}
out=${OUT_DIR:-${CARGO_TARGET_DIR:-target}/stability}
examples=(${EXAMPLES:-pi_dartboard matmul_mw jacobi2d stencil3d_torus obstacle3d isort})
quick=()
[ "${QUICK:-0}" = 1 ] && quick=(--quick)
speed=(--host-speed "${HOST_SPEED:-rescale}")
declare -A args=(
  [pi_dartboard]="1000000 10"
  [matmul_mw]="512 4"
  [jacobi2d]="512 500"
  [stencil3d_torus]="96 200"
  [obstacle3d]="48 10000"
  [isort]="1048576 10"
)
mkdir -p "$out"
out=$(cd "$out" && pwd)
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT

for t in $(seq 1 "$tables"); do
  echo "stability: measuring machine table $t of $tables" >&2
  XDG_CACHE_HOME=$cache MPICAST_LOAD_LIMIT=1000 "$bin" bench machine "${quick[@]}" -o "$out/table$t.json" > /dev/null
done
for t in $(seq 1 "$tables"); do
  perl -MJSON::PP -e '
    local $/; open my $f, "<", $ARGV[0] or die; my $j = decode_json(<$f>);
    my $l = $j->{load};
    printf "table %s: measured in %.1f s, other processes %s\n", $ARGV[1], $j->{duration_s},
      $l ? sprintf("%.2f of %d CPUs", $l->{other_cpus}, $l->{cpus}) : "not recorded";
  ' "$out/table$t.json" "$t"
done

# A prediction's predicted_s.
predicted() { perl -MJSON::PP -e 'local $/; open my $f, "<", $ARGV[0] or die; print decode_json(<$f>)->{predicted_s}' "$1"; }

# One program's row: its predictions with each table (vals), their spread; worst keeps the largest.
row() {
  printf '%-20s %5s' "$1" "$2"
  for v in "${vals[@]}"; do
    if [ "$v" = FAIL ]; then printf ' %12s' FAIL; else printf ' %12.4f' "$v"; fi
  done
  spread=$(printf '%s\n' "${vals[@]}" | { grep -v FAIL || true; } | sort -g | awk 'NR==1{lo=$1} {hi=$1} END{if (lo > 0) printf "%.2f", 100*(hi-lo)/lo; else print "n/a"}')
  printf ' %7s%%\n' "$spread"
  worst=$(awk -v a="$worst" -v b="$spread" 'BEGIN{print (b+0 > a+0) ? b : a}')
}

printf '\n%-20s %5s' program ranks
for t in $(seq 1 "$tables"); do printf ' %12s' "table $t"; done
printf ' %8s\n' spread
worst=0
for ex in "${examples[@]}"; do
  for n in 1 2; do
    vals=()
    for t in $(seq 1 "$tables"); do
      j="$out/$ex-$n-t$t.json"
      # shellcheck disable=SC2086
      "$bin" predict "examples/$ex.c" -n "$n" --platform platforms/localhost.xml "${speed[@]}" \
        --machine "$out/table$t.json" --json "$j" -- ${args[$ex]} > /dev/null 2>&1 || { vals+=(FAIL); continue; }
      vals+=("$(predicted "$j")")
    done
    row "$ex" "$n"
  done
done

# The corpus's performance set (after `make corpus`, from its cached stages and run directories):
# each program's static prediction (--estimate-bulk, as scripts/corpus.sh predicts) at 2 ranks,
# or its first rank count where it does not run at 2, with each table. CORPUS=0 leaves it out.
corpus=${CORPUS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mpicast/corpus}
manifest=scripts/corpus/programs.tsv
if [ "${CORPUS:-1}" = 1 ] && [ -d "$corpus/work" ]; then
  while IFS=$'\t' read -r name pkg _lang ranks perf _quick _srcs flags libs args _inputs _setup; do
    [ "$perf" = 1 ] && [ -d "$corpus/work/$name/stage" ] || continue
    d=$corpus/work/$name
    IFS=, read -ra rs <<<"$ranks"
    n=${rs[0]}; for r in "${rs[@]}"; do [ "$r" = 2 ] && n=2; done
    sub() { local v=$1; v=${v//\{pkg\}/$corpus/tree/$pkg}; v=${v//\{shim\}/$corpus/shim}; v=${v//\{n\}/$n}; printf '%s' "$v"; }
    argv=(); [ "$args" = - ] || read -ra argv <<<"$(sub "$args")"
    extra=(); [ "$flags" = - ] || extra+=("--cflags=$(sub "$flags")"); [ "$libs" = - ] || extra+=("--libs=$(sub "$libs")")
    vals=()
    for t in $(seq 1 "$tables"); do
      j="$out/$name-$n-t$t.json"
      (cd "$d/run" && "$bin" predict "$d/stage" -n "$n" --static-only --estimate-bulk "${extra[@]}" "${speed[@]}" \
        --platform "$OLDPWD/platforms/localhost.xml" --machine "$out/table$t.json" --json "$j" -- "${argv[@]}") \
        > /dev/null 2>&1 || { vals+=(FAIL); continue; }
      vals+=("$(predicted "$j")")
    done
    row "$name" "$n"
  done < <(grep -v '^#' "$manifest")
fi
echo
echo "largest spread between tables: ${worst}% (target: within 3%)"
