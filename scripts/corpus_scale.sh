#!/usr/bin/env bash
# Trace scaling on the corpus: for each program `scripts/corpus.sh` built (its staged sources in
# the cache), fresh traces (`mpicast trace --all-blocks`, this binary) at K and N' ranks, and the
# K-rank trace scaled to N' (`predict -n N' --trace TRACE_K`, program scaling) against the
# prediction from the N'-rank trace: the same machine table (this host's) and platform, so the
# difference is the scaling's alone. Pairs 2 -> 4, 2 -> 8 and 4 -> 16 (target: within 3%).
# Runs at 8 and 16 ranks are oversubscribed on small machines: counts, not timings.
# Writes the "## Trace scaling on the corpus" section of docs/ACCURACY.md (replaced, or appended)
# and the rows as TSV in the cache.
#
#   scripts/corpus_scale.sh [NAME...]        (make corpus-scale; after make corpus)
#
# Environment: MPICAST (the binary), MPICAST_CORPUS_DIR (cache), SCALE_DOC (the report),
# STAGE_TIMEOUT (seconds per trace or prediction; default 300), PAIRS (default "2:4 2:8 4:16"),
# SKIP (programs left out, default "hpcc gemm netpipe nas-is-A": HPCC and NetPIPE time
# themselves, gemm and NAS IS class A take minutes at 16 oversubscribed ranks).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MANIFEST=$ROOT/scripts/corpus/programs.tsv
MPICAST=${MPICAST:-$ROOT/target/release/mpicast}
CACHE=${MPICAST_CORPUS_DIR:-$HOME/.cache/mpicast/corpus}
DOC=${SCALE_DOC:-$ROOT/docs/ACCURACY.md}
STAGE_TIMEOUT=${STAGE_TIMEOUT:-300}
PAIRS=${PAIRS:-2:4 2:8 4:16}
SKIP=${SKIP:-hpcc gemm netpipe nas-is-A}
ROWS=$CACHE/scale.tsv

log() { printf 'corpus-scale: %s\n' "$*" >&2; }
die() { printf 'corpus-scale: %s\n' "$*" >&2; exit 2; }
[ -x "$MPICAST" ] || die "$MPICAST missing: run cargo build --release (make corpus-scale does)"
# The simulation runs in a child: this binary, whatever its file is called.
export MPICAST_EXE=${MPICAST_EXE:-$MPICAST}
[ -d "$CACHE/work" ] || die "no corpus in $CACHE: run make corpus first"
ONLY=("$@")
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD -- src 2>/dev/null || COMMIT="$COMMIT+changes"
T0=$(date -u '+%Y-%m-%d %H:%M')

subst() { local s=$1; s=${s//\{pkg\}/$PKGDIR}; s=${s//\{shim\}/$CACHE/shim}; s=${s//\{n\}/$2}; printf '%s' "$s"; }
# Why a stage failed: the program's first line of output where its run failed (a test that
# refuses the rank count says so there), else mpicast's last error line.
why() {
  local first
  first=$(grep -v -m1 -E '^(mpicast:|  \||\[|-+$|$)' "$1" 2>/dev/null)
  if grep -q 'the run failed' "$1" 2>/dev/null && [ -n "$first" ]; then
    printf 'the run failed: %s' "$first"
  else
    grep -E '^mpicast: ' "$1" 2>/dev/null | tail -1
  fi | tr '\t' ' ' | cut -c1-140
}

: >"$ROWS"
count=0
while IFS=$'\t' read -r name pkg lang ranks perf quick srcs flags libs args inputs setup; do
  case $name in ''|'#'*) continue ;; esac
  if [ ${#ONLY[@]} -gt 0 ]; then
    keep=0; for o in "${ONLY[@]}"; do [ "$o" = "$name" ] && keep=1; done
    [ $keep -eq 1 ] || continue
  elif [[ " $SKIP " == *" $name "* ]]; then
    continue
  fi
  dir=$CACHE/work/$name
  [ -d "$dir/stage" ] || { log "$name: not built by scripts/corpus.sh; skipped"; continue; }
  grep -qx "build.rc	0" "$dir/status" 2>/dev/null || continue
  count=$((count + 1))
  log "[$count] $name"
  PKGDIR=$CACHE/tree/$pkg
  out=$dir/scale
  rm -rf "$out" && mkdir -p "$out"
  # flags_for N: the program's --cflags and --libs at N ranks (into F).
  flags_for() {
    F=(); ARGV=()
    [ "$flags" = - ] || F+=("--cflags=$(subst "$flags" "$1")")
    [ "$libs" = - ] || F+=("--libs=$(subst "$libs" "$1")")
    [ "$args" = - ] || read -ra ARGV <<<"$(subst "$args" "$1")"
  }
  prepare_run() {
    local spec
    if [ "$inputs" != - ]; then
      for spec in $inputs; do cp "$PKGDIR/${spec%%:*}" "$dir/run/${spec#*:}"; done
    fi
    [ "$setup" = - ] || (cd "$dir/run" && sh -c "$(subst "$setup" "$1")") >/dev/null 2>&1
  }
  # trace_at N: a fresh N-rank trace in $out/tN (once per program), 0 when it worked.
  trace_at() {
    local n=$1
    [ -f "$out/t$n.ok" ] && return 0
    [ -f "$out/t$n.fail" ] && return 1
    flags_for "$n"; prepare_run "$n"
    if (cd "$dir/run" && timeout --kill-after=5 "$STAGE_TIMEOUT" "$MPICAST" trace "$dir/stage" -n "$n" -o "$out/t$n" \
        --all-blocks "${F[@]}" --mpirun-args "--mca mpi_yield_when_idle 1" --timeout "$STAGE_TIMEOUT" -- "${ARGV[@]}") \
        >"$out/t$n.log" 2>&1; then
      touch "$out/t$n.ok"
    else
      touch "$out/t$n.fail"; return 1
    fi
  }
  # predict_at N TRACE JSON: 0 when it worked.
  predict_at() {
    flags_for "$1"; prepare_run "$1"
    (cd "$dir/run" && timeout --kill-after=5 "$STAGE_TIMEOUT" "$MPICAST" predict "$dir/stage" -n "$1" --trace "$2/" \
      "${F[@]}" --json "$3" -- "${ARGV[@]}") >"${3%.json}.log" 2>&1
  }
  for pair in $PAIRS; do
    k=${pair%%:*}; n=${pair##*:}
    row() { printf '%s\t%s\t%s\t%s\n' "$name" "$k" "$n" "$1" >>"$ROWS"; }
    if ! trace_at "$k"; then row "not compared	trace at $k failed: $(why "$out/t$k.log")"; continue; fi
    if ! trace_at "$n"; then row "not compared	trace at $n failed: $(why "$out/t$n.log")"; continue; fi
    if ! predict_at "$n" "$out/t$n" "$out/real$n.json"; then row "not compared	prediction from the $n-rank trace failed: $(why "$out/real$n.log")"; continue; fi
    if ! predict_at "$n" "$out/t$k" "$out/s$k-$n.json"; then row "not compared	scaled from $k failed: $(why "$out/s$k-$n.log")"; continue; fi
    python3 - "$out/real$n.json" "$out/s$k-$n.json" >>"$ROWS.tmp" <<'PY' || { row "not compared	unreadable prediction"; continue; }
import json, sys
r, s = (json.load(open(p)) for p in sys.argv[1:3])
static = s["mode"].startswith("static")
print("compared\t%.9g\t%.9g\t%s\t%d\t%d" % (r["predicted_s"], s["predicted_s"], "static" if static else "trace", r["messages"], s["messages"]))
PY
    row "$(cat "$ROWS.tmp")"; rm -f "$ROWS.tmp"
  done
done <"$MANIFEST"
log "$count programs; rows in $ROWS"

python3 - "$ROWS" "$DOC" "$T0" "$COMMIT" "$SKIP" <<'PY'
import sys, collections
rows_path, doc, t0, commit, skip = sys.argv[1:6]
rows = collections.OrderedDict()
for line in open(rows_path):
    f = line.rstrip("\n").split("\t")
    rows.setdefault((int(f[1]), int(f[2])), []).append(f)
out = ["## Trace scaling on the corpus", "",
       f"Measured by `scripts/corpus_scale.sh` (`make corpus-scale`) from {t0} UTC, mpicast at {commit}: for each corpus program, fresh traces (`mpicast trace --all-blocks`) at K and N' ranks, and the K-rank trace scaled to N' (`predict -n N' --trace TRACE_K`, program scaling) against the prediction from the N'-rank trace, with the same machine table (this host's, fitted) and platform. Runs at 8 and 16 ranks are oversubscribed on this 2-core VM: the figures are counts, not timings. How: `static`, the static path at N' (where it reproduces the K-rank trace, or the trace cannot be scaled); `trace`, the K-rank trace scaled. Left out: {skip}. Target: within 3%.", ""]
for (k, n), rs in rows.items():
    comp, other = [], []
    for r in rs:
        if r[3] == "compared":
            real, scaled = float(r[4]), float(r[5])
            d = (scaled / real - 1) * 100 if real > 0 else (0.0 if scaled == 0 else float("inf"))
            comp.append((r[0], real, scaled, d, r[6], r[7], r[8]))
        else:
            other.append((r[0], r[4] if len(r) > 4 else ""))
    within = sum(1 for c in comp if abs(c[3]) <= 3)
    mean = sum(abs(c[3]) for c in comp) / len(comp) if comp else 0
    mx = max((abs(c[3]) for c in comp), default=0)
    st = sum(1 for c in comp if c[4] == "static")
    out += [f"### Corpus {k} -> {n}", "",
            f"{len(comp)} programs compared, {within} within 3%, mean absolute difference {mean:.2f}%, max {mx:.1f}%; {st} predicted from the static path at {n}, {len(comp) - st} from the scaled trace. Not compared: {len(other)}.", "",
            f"| program | from the {n}-rank trace s | scaled from {k} s | difference | messages | how |", "|---|---:|---:|---:|---:|---|"]
    for c in sorted(comp, key=lambda c: -abs(c[3])):
        msgs = c[5] if c[5] == c[6] else f"{c[6]}/{c[5]}"
        out.append(f"| {c[0]} | {c[1]:.4g} | {c[2]:.4g} | {c[3]:+.1f}% | {msgs} | {c[4]} |")
    for o in other:
        out.append(f"| {o[0]} | | | not compared | | {o[1].replace('|', '/')} |")
    out.append("")
text = open(doc).read() if doc and __import__("os").path.exists(doc) else ""
head = "## Trace scaling on the corpus"
i = text.find(head)
if i >= 0:
    j = text.find("\n## ", i + len(head))
    text = text[:i] + "\n".join(out) + ("\n" + text[j + 1:] if j >= 0 else "")
else:
    text = text.rstrip("\n") + "\n\n" + "\n".join(out)
open(doc, "w").write(text)
print("\n".join(out))
PY
