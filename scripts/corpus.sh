#!/usr/bin/env bash
# The external corpus: real MPI programs from Debian source packages (hpcc, simgrid, mpich, openmpi,
# netpipe), fetched at run time into ~/.cache/mpicast/corpus (never committed), built with
# mpicc/mpicxx -O2, run at their rank counts, and put through mpicast analyze, trace and predict.
# Writes docs/CORPUS.md and results.json (in the cache). Not part of `make test`.
#
#   scripts/corpus.sh [full|quick] [NAME...]     (make corpus [CORPUS=quick])
#
# scripts/corpus/programs.tsv names the programs; scripts/corpus/report.pl writes the report.
# Environment: MPICAST (the binary; default target/release/mpicast), MPICAST_CORPUS_DIR (cache), CORPUS_DOC (the report; default docs/CORPUS.md),
# RUN_TIMEOUT, STAGE_TIMEOUT (seconds).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MANIFEST=$ROOT/scripts/corpus/programs.tsv
MPICAST=${MPICAST:-$ROOT/target/release/mpicast}
CACHE=${MPICAST_CORPUS_DIR:-$HOME/.cache/mpicast/corpus}
DOC=${CORPUS_DOC:-$ROOT/docs/CORPUS.md}
RUN_TIMEOUT=${RUN_TIMEOUT:-60}
STAGE_TIMEOUT=${STAGE_TIMEOUT:-120}
MPIRUN_ARGS="--allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none"
PACKAGES=(hpcc simgrid mpich openmpi netpipe)

SET=full
# The commit the run starts from (the binary is built from it by `make corpus`), "+changes" when
# the tree differs from it: the report names it, not whatever HEAD is when the run ends.
export MPICAST_COMMIT
MPICAST_COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || true)
if [ -n "$MPICAST_COMMIT" ] && ! git -C "$ROOT" diff --quiet HEAD -- src microbench instrument 2>/dev/null; then
  MPICAST_COMMIT="$MPICAST_COMMIT+changes"
fi
if [ $# -gt 0 ] && { [ "$1" = full ] || [ "$1" = quick ]; }; then SET=$1; shift; fi
ONLY=("$@")

log() { printf 'corpus: %s\n' "$*" >&2; }
die() { printf 'corpus: %s\n' "$*" >&2; exit 2; }

[ -x "$MPICAST" ] || die "$MPICAST missing: run cargo build --release (make corpus does)"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
  log "another corpus run holds $CACHE/.lock; waiting"
  flock 9
fi

SUDO=()
[ "$(id -u)" -eq 0 ] || SUDO=(sudo)

# --- what the corpus needs besides scripts/setup.sh's packages ----------------------------------
need=()
for p in libblas-dev xz-utils util-linux perl; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null \
    || die "cannot install ${need[*]}"
fi

# --- deb-src entries mirroring the deb ones ------------------------------------------------------
have_src() { grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null; }
add_src() {
  local out=/etc/apt/sources.list.d/mpicast-corpus-src.sources tmp
  tmp=$(mktemp)
  # deb822 stanzas of Debian's own archives, Types: deb -> deb-src.
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'BEGIN { RS = ""; ORS = "\n\n" }
         /Types:[^\n]*deb/ && /URIs:[^\n]*debian/ { sub(/Types:[^\n]*/, "Types: deb-src"); print }' "$f" >>"$tmp"
  done
  # one-line format
  if [ -f /etc/apt/sources.list ]; then
    grep -E '^deb .*debian' /etc/apt/sources.list | sed 's/^deb /deb-src /' >"${out%.sources}.list.tmp" || true
    if [ -s "${out%.sources}.list.tmp" ]; then "${SUDO[@]}" mv "${out%.sources}.list.tmp" "${out%.sources}.list"; else rm -f "${out%.sources}.list.tmp"; fi
  fi
  if [ -s "$tmp" ]; then "${SUDO[@]}" cp "$tmp" "$out"; fi
  rm -f "$tmp"
}

fetch() {
  local missing=()
  for p in "${PACKAGES[@]}"; do [ -f "$CACHE/tree/$p/.unpacked" ] || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && { log "sources cached in $CACHE/tree (${PACKAGES[*]})"; return 0; }
  if ! have_src; then
    log "adding deb-src entries (/etc/apt/sources.list.d/mpicast-corpus-src.*)"
    add_src
    "${SUDO[@]}" apt-get update -q >/dev/null || die "apt-get update failed"
  elif ! apt-cache showsrc "${missing[0]}" >/dev/null 2>&1 || [ -z "$(apt-cache showsrc "${missing[0]}" 2>/dev/null)" ]; then
    "${SUDO[@]}" apt-get update -q >/dev/null || die "apt-get update failed"
  fi
  mkdir -p "$CACHE/src" "$CACHE/tree"
  for p in "${missing[@]}"; do
    local orig
    orig=$(ls "$CACHE/src/${p}_"*.orig.tar.* 2>/dev/null | head -1)
    if [ -z "$orig" ]; then
      log "apt-get source --download-only $p"
      # A missing .debian.tar is an error to apt-get, but the .orig tarball is all we use.
      (cd "$CACHE/src" && apt-get source --download-only "$p" >"$CACHE/src/$p.log" 2>&1) || true
      orig=$(ls "$CACHE/src/${p}_"*.orig.tar.* 2>/dev/null | head -1)
      [ -n "$orig" ] || die "$p: no .orig tarball downloaded (see $CACHE/src/$p.log)"
    fi
    # Upstream sources only (Debian's patches are not applied); only the parts the corpus uses.
    local parts=()
    case $p in
      mpich) parts=(--wildcards '*/test/mpi/*' '*/examples/*') ;;
      openmpi) parts=(--wildcards '*/examples/*') ;;
      simgrid) parts=(--wildcards '*/examples/smpi/*' '*/teshsuite/smpi/mpich3-test/*') ;;
    esac
    log "unpacking $(basename "$orig")"
    rm -rf "$CACHE/tree/$p.tmp" && mkdir -p "$CACHE/tree/$p.tmp"
    tar -xf "$orig" -C "$CACHE/tree/$p.tmp" --strip-components=1 "${parts[@]}" || die "$p: cannot unpack $orig"
    rm -rf "$CACHE/tree/$p" && mv "$CACHE/tree/$p.tmp" "$CACHE/tree/$p"
    basename "$orig" >"$CACHE/tree/$p/.unpacked"
  done
}

# What configure would have written, and headers standing in for SMPI's extensions (SimGrid's
# NAS and gemm examples use SMPI_SHARED_MALLOC, SMPI_SAMPLE_GLOBAL, TRACE_smpi_set_category).
prepare() {
  local inc=$CACHE/tree/mpich/test/mpi/include
  if [ -f "$inc/mpitestconf.h.in" ] && [ ! -f "$inc/mpitestconf.h" ]; then
    sed -E -e 's/^#undef (HAVE_(STDARG_H|STDLIB_H|STRING_H|STRINGS_H|SYS_TIME_H|SYS_RESOURCE_H|SYS_TYPES_H|SYS_STAT_H|UNISTD_H|GETRUSAGE|MPI_WIN_CREATE|MPI_IO|LONG_LONG|LONG_DOUBLE|STDINT_H|INTTYPES_H|USLEEP|STRDUP|PTHREAD_H))$/#define \1 1/' \
      -e 's/^#undef THREAD_PACKAGE_NAME$/#define THREAD_PACKAGE_NAME THREAD_PACKAGE_NONE/' \
      "$inc/mpitestconf.h.in" >"$inc/mpitestconf.h"
  fi
  local shim=$CACHE/shim
  mkdir -p "$shim/smpi" "$shim/simgrid"
  cat >"$shim/smpi_compat.h" <<'EOF'
/* SMPI extensions as plain MPI: shared allocations are private, sampled loops run every iteration. */
#ifndef CORPUS_SMPI_COMPAT_H
#define CORPUS_SMPI_COMPAT_H
#include <stdlib.h>
#define SMPI_SHARED_MALLOC(n) malloc(n)
#define SMPI_SHARED_FREE(p) free(p)
#define SMPI_SAMPLE_GLOBAL(init, cond, step, iters, thres) for (init; cond; step)
#define SMPI_SAMPLE_LOCAL(init, cond, step, iters, thres) for (init; cond; step)
#define TRACE_smpi_set_category(c) ((void)(c))
#endif
EOF
  printf '#include <mpi.h>\n#include "../smpi_compat.h"\n' >"$shim/smpi/mpi.h"
  printf '#include "../smpi_compat.h"\n' >"$shim/simgrid/instr.h"
}

# --- helpers --------------------------------------------------------------------------------------
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
# The first line that says what failed: mpicast's own `mpicast: ...` line, else a panic, else the
# last non-empty line.
reason() {
  local f=$1 line
  line=$(grep -m1 -E "panicked at|^thread '.*' panicked" "$f" 2>/dev/null)
  if [ -n "$line" ]; then
    local msg
    msg=$(grep -A1 -m1 -E "panicked at" "$f" | tail -1)
    printf 'panic: %s %s' "${line#*panicked at }" "$msg" | tr -s '\t ' '  ' | cut -c1-300
    return
  fi
  line=$(grep -m1 -E '^mpicast: ' "$f" 2>/dev/null)
  # A build or run that failed under mpicast: its first compiler error or failing line.
  case $line in *:) line="$line $(grep -m1 -E 'error|Error|undefined reference|Abort|signal' "$f" | sed -E 's/^[ |]*//; s#/tmp/mpicast-[^/]*/src/##')" ;; esac
  # A run: the first line that says what went wrong, not mpirun's banners.
  [ -n "$line" ] || line=$(grep -m1 -E 'rror|Abort|abort|ssert|signal|Segmentation|killed|exited on|Fatal|Found [0-9]+ errors' "$f" 2>/dev/null | grep -v -E '^-+$|orte_base_help_aggregate')
  [ -n "$line" ] || line=$(grep -v -E '^[[:space:]]*$|^-+$|orte_base_help_aggregate' "$f" 2>/dev/null | tail -1)
  printf '%s' "$line" | tr -s '\t ' '  ' | cut -c1-300
}
# kv FILE KEY VALUE: one status line (tabs and newlines in values flattened).
kv() { printf '%s\t%s\n' "$2" "$(printf '%s' "$3" | tr '\t\n' '  ')" >>"$1"; }
# stage STATUS NAME TIMEOUT LOG CMD...: runs CMD, records NAME.rc, NAME.wall_s, NAME.reason.
stage() {
  local st=$1 name=$2 limit=$3 logf=$4; shift 4
  local t0 rc
  t0=$(now)
  timeout --kill-after=5 "$limit" "$@" >"$logf" 2>&1
  rc=$?
  kv "$st" "$name.rc" "$rc"
  kv "$st" "$name.wall_s" "$(elapsed "$t0")"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    kv "$st" "$name.reason" "timed out after ${limit} s"
  elif [ "$rc" -ne 0 ]; then
    kv "$st" "$name.reason" "$(reason "$logf")"
  fi
  return "$rc"
}
# mpicast_flags SUBCOMMAND: the program's compiler flags as mpicast takes them (into FLAGS_OUT):
# every subcommand builds and preprocesses with --cflags (the -D, -I and -include flags in it
# included); the ones that build a binary also get --libs.
mpicast_flags() {
  FLAGS_OUT=()
  local sub=$1
  [ ${#P_FLAGS[@]} -gt 0 ] && FLAGS_OUT+=("--cflags=${P_FLAGS[*]}")
  case $sub in
    trace|predict) [ ${#P_LIBS[@]} -gt 0 ] && FLAGS_OUT+=("--libs=${P_LIBS[*]}") ;;
  esac
  return 0
}

subst() { local s=$1; s=${s//\{pkg\}/$PKGDIR}; s=${s//\{shim\}/$CACHE/shim}; s=${s//\{n\}/$2}; printf '%s' "$s"; }

# --- one program ----------------------------------------------------------------------------------
run_program() {
  local name=$1 pkg=$2 lang=$3 ranks=$4 srcs=$6 flags=$7 libs=$8 args=$9 inputs=${10} setup=${11}
  PKGDIR=$CACHE/tree/$pkg
  local dir=$CACHE/work/$name
  rm -rf "$dir" && mkdir -p "$dir/run" "$dir/stage"
  local st=$dir/status
  : >"$st"
  kv "$st" name "$name"

  # Sources: globs under the package; staged (with the headers beside them) so that mpicast sees
  # exactly the program's files.
  local files=() g f
  for g in $srcs; do
    for f in "$PKGDIR"/$g; do [ -f "$f" ] && files+=("${f#$PKGDIR/}"); done
  done
  if [ ${#files[@]} -eq 0 ]; then kv "$st" build.rc 1; kv "$st" build.reason "no source matches $srcs"; return; fi
  local d
  for f in "${files[@]}"; do
    d=$(dirname "$f")
    mkdir -p "$dir/stage/$d"
    cp "$PKGDIR/$f" "$dir/stage/$f"
    cp -n "$PKGDIR/$d"/*.h "$dir/stage/$d/" 2>/dev/null || true
  done
  kv "$st" sources "${#files[@]}"
  kv "$st" lines "$(cd "$dir/stage" && cat "${files[@]}" | wc -l)"

  P_FLAGS=(); P_LIBS=()
  [ "$flags" = - ] || read -ra P_FLAGS <<<"$(subst "$flags" 2)"
  [ "$libs" = - ] || read -ra P_LIBS <<<"$libs"
  local cc=mpicc; [ "$lang" = "c++" ] && cc=mpicxx

  # Build
  local exe=$dir/prog
  if ! stage "$st" build 300 "$dir/build.log" bash -c 'cd "$1" && shift && exec "$@"' _ "$dir/stage" \
      "$cc" -O2 "${P_FLAGS[@]}" "${files[@]}" -o "$exe" "${P_LIBS[@]}"; then
    kv "$st" build.reason "$(grep -m1 -E 'error|undefined reference' "$dir/build.log" | sed "s#$dir/stage/##g" | cut -c1-300)"
  fi

  # Inputs and setup for a run at n ranks, in $dir/run.
  prepare_run() {
    local n=$1 spec src dst
    if [ "$inputs" != - ]; then
      for spec in $inputs; do src=${spec%%:*}; dst=${spec#*:}; cp "$PKGDIR/$src" "$dir/run/$dst"; done
    fi
    [ "$setup" = - ] || (cd "$dir/run" && sh -c "$(subst "$setup" "$n")") >/dev/null 2>&1
  }
  local argv=() n
  if [ -x "$exe" ]; then
    IFS=, read -ra rs <<<"$ranks"
    for n in "${rs[@]}"; do
      prepare_run "$n"
      argv=(); [ "$args" = - ] || read -ra argv <<<"$(subst "$args" "$n")"
      # The span library (instrument/mpicast_span.c, preloaded into the ranks) writes each rank's
      # MPI_Init-to-MPI_Finalize span: the time a prediction covers, without mpirun's start-up.
      rm -rf "$dir/span$n"; mkdir -p "$dir/span$n"
      local span_args=()
      [ -n "$SPAN_LIB" ] && span_args=(-x "LD_PRELOAD=$SPAN_LIB" -x "MPICAST_SPAN_DIR=$dir/span$n")
      # shellcheck disable=SC2086
      stage "$st" "run$n" "$RUN_TIMEOUT" "$dir/run$n.log" bash -c 'cd "$1" && shift && exec "$@"' _ "$dir/run" \
        mpirun $MPIRUN_ARGS "${span_args[@]}" -n "$n" "$exe" "${argv[@]}" &&
        [ "$(cat "$dir/span$n"/span-* 2>/dev/null | wc -l)" -eq "$n" ] &&
        kv "$st" "run$n.span_s" "$(cat "$dir/span$n"/span-* | awk '{ s = $6 - $4; if (s > m) m = s } END { printf "%.6f", m }')"
    done
  fi

  # mpicast analyze (all sources, the program's -D macros)
  mpicast_flags analyze
  stage "$st" analyze "$STAGE_TIMEOUT" "$dir/analyze.log" \
    "$MPICAST" analyze "$dir/stage" "${FLAGS_OUT[@]}" --json "$dir/analysis.json"

  # trace and predict at K ranks: 2 where the program runs at 2, else its first rank count
  local k
  IFS=, read -ra rs <<<"$ranks"
  k=${rs[0]}; for n in "${rs[@]}"; do [ "$n" = 2 ] && k=2; done
  kv "$st" k "$k"
  argv=(); [ "$args" = - ] || read -ra argv <<<"$(subst "$args" "$k")"
  prepare_run "$k"
  mpicast_flags trace
  # Two traced runs: the counts (with the address probes that measure what irregular
  # references touch), and with --time-blocks for block benchmarking (no probes: their own
  # time would be in the bursts).
  (cd "$dir/run" && stage "$st" trace "$STAGE_TIMEOUT" "$dir/trace.log" \
    "$MPICAST" trace "$dir/stage" -n "$k" -o "$dir/trace" --all-blocks "${FLAGS_OUT[@]}" \
      --mpirun-args "--mca mpi_yield_when_idle 1" --timeout "$RUN_TIMEOUT" -- "${argv[@]}")
  if [ -d "$dir/trace" ]; then
    (cd "$dir/run" && stage "$st" trace_timed "$STAGE_TIMEOUT" "$dir/trace_timed.log" \
      "$MPICAST" trace "$dir/stage" -n "$k" -o "$dir/trace_timed" --all-blocks --time-blocks "${FLAGS_OUT[@]}" \
        --mpirun-args "--mca mpi_yield_when_idle 1" --timeout "$RUN_TIMEOUT" -- "${argv[@]}")
  fi

  mpicast_flags predict
  local mode extra
  for mode in static trace measured; do
    case $mode in
      static) extra=(--static-only --estimate-bulk) ;;
      trace) extra=(--trace "$dir/trace/") ;;
      measured) extra=(--trace "$dir/trace_timed/" --measured) ;;
    esac
    local needs=
    case $mode in trace) needs=$dir/trace ;; measured) needs=$dir/trace_timed ;; esac
    if [ -n "$needs" ] && [ ! -d "$needs" ]; then
      kv "$st" "predict_$mode.rc" skip
      kv "$st" "predict_$mode.reason" "no trace (mpicast trace failed)"
      continue
    fi
    (cd "$dir/run" && stage "$st" "predict_$mode" "$STAGE_TIMEOUT" "$dir/predict_$mode.log" \
      "$MPICAST" predict "$dir/stage" -n "$k" "${extra[@]}" "${FLAGS_OUT[@]}" --json "$dir/predict_$mode.json" -- "${argv[@]}")
  done

  # Scaling 2 -> 4: the 2-rank trace scaled to 4 ranks against a trace taken at 4 (trace
  # counts both, the same machine table and platform), where the program traces at both (a
  # 2-rank run that aborts, as a test that needs 3 ranks does, leaves a partial trace).
  if [ "$k" = 2 ] && [[ ",$ranks," == *,4,* ]] && [ -d "$dir/trace" ] \
      && grep -qx "trace.rc	0" "$st"; then
    argv=(); [ "$args" = - ] || read -ra argv <<<"$(subst "$args" 4)"
    prepare_run 4
    mpicast_flags trace
    (cd "$dir/run" && stage "$st" trace4 "$STAGE_TIMEOUT" "$dir/trace4.log" \
      "$MPICAST" trace "$dir/stage" -n 4 -o "$dir/trace4" --all-blocks "${FLAGS_OUT[@]}" \
        --mpirun-args "--mca mpi_yield_when_idle 1" --timeout "$RUN_TIMEOUT" -- "${argv[@]}")
    mpicast_flags predict
    if [ -d "$dir/trace4" ]; then
      (cd "$dir/run" && stage "$st" predict_real4 "$STAGE_TIMEOUT" "$dir/predict_real4.log" \
        "$MPICAST" predict "$dir/stage" -n 4 --trace "$dir/trace4/" "${FLAGS_OUT[@]}" --json "$dir/predict_real4.json" -- "${argv[@]}")
      (cd "$dir/run" && stage "$st" predict_scaled4 "$STAGE_TIMEOUT" "$dir/predict_scaled4.log" \
        "$MPICAST" predict "$dir/stage" -n 4 --trace "$dir/trace/" "${FLAGS_OUT[@]}" --json "$dir/predict_scaled4.json" -- "${argv[@]}")
    fi
  fi
}

# --- main -----------------------------------------------------------------------------------------
T0=$(now)
fetch
prepare
# Measure this host once (machine table and network platform) before the clock of any program.
"$MPICAST" predict "$ROOT/examples/pi_dartboard.c" -n 2 --json /dev/null -- 1000 1 >/dev/null 2>&1 || true

mkdir -p "$CACHE/work" "$CACHE/span"
SPAN_LIB=$CACHE/span/libmpicast_span.so
if [ ! -f "$SPAN_LIB" ] || [ "$ROOT/instrument/mpicast_span.c" -nt "$SPAN_LIB" ]; then
  mpicc -O2 -shared -fPIC -o "$SPAN_LIB.tmp$$" "$ROOT/instrument/mpicast_span.c" && mv "$SPAN_LIB.tmp$$" "$SPAN_LIB" ||
    { log "cannot build the span library: runs are timed by mpirun's wall clock"; SPAN_LIB=; }
fi
selected=()
while IFS=$'\t' read -r name pkg lang ranks perf quick srcs flags libs args inputs setup; do
  case $name in ''|'#'*) continue ;; esac
  if [ ${#ONLY[@]} -gt 0 ]; then
    keep=0; for o in "${ONLY[@]}"; do [ "$o" = "$name" ] && keep=1; done
    [ $keep -eq 1 ] || continue
  elif [ "$SET" = quick ] && [ "$quick" != 1 ]; then
    continue
  fi
  selected+=("$name")
  log "[${#selected[@]}] $name ($pkg)"
  run_program "$name" "$pkg" "$lang" "$ranks" "$perf" "$srcs" "$flags" "$libs" "$args" "$inputs" "$setup" </dev/null
done <"$MANIFEST"

TOTAL=$(elapsed "$T0")
log "ran ${#selected[@]} programs in ${TOTAL} s"
perl "$ROOT/scripts/corpus/report.pl" --manifest "$MANIFEST" --work "$CACHE/work" --set "$SET" \
  --total-s "$TOTAL" --json "$CACHE/results.json" --doc "$DOC" --mpicast "$MPICAST" "${selected[@]}"
