#!/usr/bin/env bash
# mpicast's accuracy benchmark (`make accuracy`): every example at two problem sizes and 1, 2
# and 4 ranks through `mpicast validate` (real runs, median of RUNS, against the predictions of
# every mode on this host: the platform and machine table `mpicast predict` measures and
# caches), then the communication-heavy examples at 2 and 4 ranks on emulated networks
# (scripts/netns.sh: two namespaces, a 100 Mbit/s LAN and an xDSL line, characterised by
# `mpicast bench network`; needs root, skipped with a message otherwise).
#
# Prints the table and the mean absolute percentage error (MAPE) per mode, and writes
# docs/ACCURACY.md (machine, date, load, tables, MAPE). Targets on this host: static 20%, trace
# counts 15%, block benchmarking 10%, scaled 15%; exits 1 only when a mode's MAPE over the
# local rows is over twice its target (the emulated rows are reported, not gated).
#
# Environment: MPICAST (binary; default ${CARGO_TARGET_DIR:-target}/release/mpicast), RUNS (3),
# EXAMPLES (names, default all six), SIZES (all | first: one size per example), RANKS (1,2,4; empty: no local rows),
# MODES (static,trace,measured,scaled), OPS (source or compiled: predict's --ops), SCENARIOS ("lan xdsl"; empty: no emulated network),
# OUT (docs/ACCURACY.md), ACCURACY_DIR (where the JSON goes; ${CARGO_TARGET_DIR:-target}/accuracy).
set -uo pipefail
cd "$(dirname "$0")/.."

bin=${MPICAST:-${CARGO_TARGET_DIR:-target}/release/mpicast}
if ! [ -x "$bin" ] || ! "$bin" validate --help >/dev/null 2>&1; then
  echo "accuracy: no mpicast binary with \`validate\` at $bin (cargo build --release, or set MPICAST)" >&2
  exit 2
fi
if ! command -v perl >/dev/null 2>&1 || ! perl -MJSON::PP -e 1 2>/dev/null; then
  echo "accuracy: needs perl with JSON::PP (Debian: perl, installed with git)" >&2
  exit 2
fi
runs=${RUNS:-3}
ranks=${RANKS-1,2,4}
modes=${MODES:-static,trace,measured,scaled}
ops=${OPS:-compiled}
sizes=${SIZES:-all}
scenarios=${SCENARIOS-lan xdsl}
out=${OUT:-docs/ACCURACY.md}
examples=(${EXAMPLES:-pi_dartboard matmul_mw jacobi2d stencil3d_torus obstacle3d isort})

# Problem sizes: a run lasts roughly 0.2 to 2 s on these 2-core machines (4 ranks oversubscribed).
declare -A args=(
  [pi_dartboard]="1000000 10|2000000 10"
  [matmul_mw]="512 4|768 3"
  [jacobi2d]="512 500|1024 300"
  [stencil3d_torus]="96 200|128 100"
  [obstacle3d]="48 10000|64 10000"
  [isort]="1048576 10|2097152 10"
)
# On the emulated networks: messages cost DELAY + size / RATE, so fewer iterations there.
declare -A net_args=(
  [lan-jacobi2d]="512 300"
  [lan-stencil3d_torus]="64 100"
  [lan-isort]="262144 5"
  [lan-obstacle3d]="32 10000"
  [xdsl-jacobi2d]="256 40"
  [xdsl-stencil3d_torus]="32 20"
  [xdsl-isort]="16384 3"
  [xdsl-obstacle3d]="24 30"
)
# Largest ping-pong size per scenario (a 16 MiB message takes 13 s at 10 Mbit/s).
declare -A net_max_size=([lan]=1048576 [xdsl]=131072 [test]=1048576)
net_examples=(jacobi2d stencil3d_torus isort obstacle3d)

# Every validation's JSON, the network tables and the outputs stay here for a closer look.
tmp=${ACCURACY_DIR:-${CARGO_TARGET_DIR:-target}/accuracy}
mkdir -p "$tmp"
rm -f "$tmp"/*.json "$tmp"/*.txt "$tmp"/*.xml "$tmp"/manifest
netns_used=0
cleanup() {
  if [ $netns_used = 1 ]; then scripts/netns.sh down all >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
manifest=$tmp/manifest
: >"$manifest"

load() { cut -d' ' -f1-3 /proc/loadavg; }
load_before=$(load)
start=$(date +%s)
cpu=$(awk -F: '/model name/ { sub(/^ +/, "", $2); print $2; exit }' /proc/cpuinfo)
cores=$(nproc)
echo "accuracy: $cpu, $cores cores, load $load_before; $runs runs per point; ranks $ranks; binary $bin"

# Local rows.
configs=()
for ex in "${examples[@]}"; do
  [ -n "${args[$ex]:-}" ] || { echo "accuracy: unknown example '$ex' (valid: ${!args[*]})" >&2; exit 2; }
  IFS='|' read -r -a list <<<"${args[$ex]}"
  if [ "$sizes" = first ]; then list=("${list[0]}"); fi
  for a in "${list[@]}"; do configs+=("$ex|$a"); done
done
# RANKS empty: the emulated networks only.
if [ -z "$ranks" ]; then configs=(); fi
k=0
for c in "${configs[@]}"; do
  k=$((k + 1))
  ex=${c%%|*}
  a=${c#*|}
  j=$tmp/local-$k.json
  echo "accuracy: [$k/${#configs[@]}] $ex $a at $ranks ranks"
  "$bin" validate "examples/$ex.c" -n "$ranks" --runs "$runs" --modes "$modes" --ops "$ops" --args "$a" --json "$j" >"$tmp/local-$k.txt"
  st=$?
  if [ -f "$j" ]; then
    printf 'run\tlocal\t%s\n' "$j" >>"$manifest"
  else
    echo "accuracy: $ex $a: validate failed (status $st), left out" >&2
    printf 'note\tlocal\t%s %s: validate failed (status %s), left out\n' "$ex" "$a" "$st" >>"$manifest"
  fi
done

# Emulated networks.
if [ -n "$scenarios" ]; then
  if why=$(scripts/netns.sh check 2>&1); then
    netns_used=1
    for sc in $scenarios; do
      echo "accuracy: emulated network $sc"
      if ! scripts/netns.sh up "$sc" 2; then
        printf 'note\t%s\tnetns.sh up %s failed, scenario skipped\n' "$sc" "$sc" >>"$manifest"
        continue
      fi
      eval "$(scripts/netns.sh env "$sc")"
      echo "accuracy: $sc: mpicast bench network --quick --max-size ${net_max_size[$sc]} on $NETNS_HOSTS"
      "$bin" bench network --quick --max-size "${net_max_size[$sc]}" --hosts "$NETNS_HOSTS" \
        --mpirun-args "$NETNS_MPIRUN_ARGS" -o "$tmp/$sc-network.json" --platform-out "$tmp/$sc.xml" \
        >"$tmp/$sc-bench.txt" 2>&1
      if ! [ -f "$tmp/$sc.xml" ] || ! [ -f "$tmp/$sc-network.json" ]; then
        echo "accuracy: $sc: bench network failed: $(tail -n 1 "$tmp/$sc-bench.txt")" >&2
        printf 'note\t%s\tbench network failed: %s\n' "$sc" "$(tail -n 1 "$tmp/$sc-bench.txt")" >>"$manifest"
        scripts/netns.sh down "$sc"
        continue
      fi
      printf 'net\t%s\t%s\t%s\t%s\t%s\n' "$sc" "$tmp/$sc-network.json" "$NETNS_SHAPER" "$NETNS_RATE_BIT_S" "$NETNS_DELAY_US" >>"$manifest"
      for ex in "${net_examples[@]}"; do
        case " ${examples[*]} " in *" $ex "*) ;; *) continue ;; esac
        a=${net_args[$sc-$ex]:-}
        [ -n "$a" ] || continue
        j=$tmp/$sc-$ex.json
        echo "accuracy: $sc: $ex $a at 2,4 ranks (one namespace per host, ranks round-robin)"
        # Two namespaces share this machine's cores: one core each.
        "$bin" validate "examples/$ex.c" -n 2,4 --runs "$runs" --modes "$modes" --ops "$ops" --args "$a" \
          --platform "$tmp/$sc.xml" --cores-per-host $((cores / NETNS_HOST_COUNT > 0 ? cores / NETNS_HOST_COUNT : 1)) \
          --hostfile "$NETNS_HOSTFILE" --mpirun-args "$NETNS_MPIRUN_ARGS" --json "$j" >"$tmp/$sc-$ex.txt"
        st=$?
        if [ -f "$j" ]; then
          printf 'run\t%s\t%s\n' "$sc" "$j" >>"$manifest"
        else
          printf 'note\t%s\t%s %s: validate failed (status %s), left out\n' "$sc" "$ex" "$a" "$st" >>"$manifest"
        fi
      done
      scripts/netns.sh down "$sc"
    done
  else
    echo "accuracy: emulated networks skipped: ${why#netns: }"
    printf 'note\temulated\tskipped: %s\n' "${why#netns: }" >>"$manifest"
  fi
fi

load_after=$(load)
export ACC_DATE ACC_CPU ACC_CORES ACC_HOST ACC_LOAD_BEFORE ACC_LOAD_AFTER ACC_RUNS ACC_RANKS ACC_MINUTES ACC_OUT ACC_OPS
ACC_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
ACC_CPU=$cpu
ACC_CORES=$cores
ACC_HOST=$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)
ACC_LOAD_BEFORE=$load_before
ACC_LOAD_AFTER=$load_after
ACC_RUNS=$runs
ACC_OPS=$ops
ACC_RANKS=$ranks
ACC_MINUTES=$(( ($(date +%s) - start + 30) / 60 ))
ACC_OUT=$out

# The report: tables and MAPE from the validations' JSON (perl's core JSON::PP).
perl -MJSON::PP -e '
use strict; use warnings;
my %target = (static => 20, trace => 15, measured => 10, scaled => 15);
my %label = (static => "static", trace => "trace counts", measured => "block bench", scaled => "scaled");
my @order = qw(static trace measured scaled);
my (@groups, %rows, %notes, %net);
open(my $m, "<", $ARGV[0]) or die "manifest: $!";
while (<$m>) {
  chomp; my @f = split /\t/;
  push @groups, $f[1] unless grep { $_ eq $f[1] } @groups;
  if ($f[0] eq "run") {
    open(my $fh, "<", $f[2]) or next; local $/; my $v = decode_json(<$fh>);
    push @{$rows{$f[1]}}, $v;
  } elsif ($f[0] eq "note") { push @{$notes{$f[1]}}, $f[2]; }
  elsif ($f[0] eq "net") {
    open(my $fh, "<", $f[2]) or next; local $/; my $t = decode_json(<$fh>);
    $net{$f[1]} = { table => $t, shaper => $f[3], rate => $f[4], delay => $f[5] };
  }
}
sub fmt { my $s = shift; return "-" unless defined $s;
  return sprintf("%.1f us", $s * 1e6) if abs($s) < 1e-3;
  return sprintf("%.1f ms", $s * 1e3) if abs($s) < 1;
  return sprintf("%.3f s", $s); }
sub name { my $p = shift; $p =~ s{.*/}{}; $p =~ s{\.c$}{}; $p }
my (%mape, %count, %na, $md, $txt, $fail);
my %reasons; my @reason_list;
for my $g (@groups) {
  next unless $rows{$g};
  my (%sum, %n, %nna, %inside);
  my $title = $g eq "local" ? "This host" : "Emulated network: $g";
  $md .= "\n## $title\n\n";
  $txt .= "\n$title\n";
  $md .= "| program | arguments | ranks | measured median (min) |" . join("", map { " $label{$_} |" } @order) . "\n";
  $md .= "|---|---|---:|---:|" . ("---:|" x @order) . "\n";
  $txt .= sprintf("%-16s %-15s %5s %22s", "program", "arguments", "ranks", "measured median (min)") . join("", map { sprintf(" %17s", $label{$_}) } @order) . "\n";
  for my $v (@{$rows{$g}}) {
    for my $p (@{$v->{points}}) {
      my $meas = $p->{measured} ? fmt($p->{measured}{median_s}) . " (" . fmt($p->{measured}{min_s}) . ")" : "run failed";
      my (@mcells, @tcells);
      for my $mode (@order) {
        my ($r) = grep { $_->{mode} eq $mode } @{$p->{predictions}};
        if (!$r) { push @mcells, "-"; push @tcells, "-"; next; }
        if (defined $r->{error_pct}) {
          push @mcells, sprintf("%s (%+.1f%%)", fmt($r->{predicted_s}), $r->{error_pct});
          push @tcells, sprintf("%s %+6.1f%%", fmt($r->{predicted_s}), $r->{error_pct});
          $sum{$mode} += abs($r->{error_pct}); $n{$mode}++;
          my $iv = $r->{interval_s};
          $inside{$mode}++ if $iv && $p->{measured} && $p->{measured}{median_s} >= $iv->[0] && $p->{measured}{median_s} <= $iv->[1];
        } else {
          my $why = $r->{reason} // "n/a";
          $reasons{$why} //= do { push @reason_list, $why; scalar @reason_list };
          push @mcells, "n/a [$reasons{$why}]"; push @tcells, "n/a [$reasons{$why}]";
          $nna{$mode}++;
        }
      }
      my $prog = name($v->{program}[0]); my $a = join(" ", @{$v->{args}});
      $md .= "| $prog | $a | $p->{ranks} | $meas |" . join("", map { " $_ |" } @mcells) . "\n";
      $txt .= sprintf("%-16s %-15s %5d %22s", $prog, $a, $p->{ranks}, $meas) . join("", map { sprintf(" %17s", $_) } @tcells) . "\n";
    }
  }
  $md .= "\nMean absolute percentage error (MAPE) over the rows above, and the points whose measured median the prediction interval holds:\n\n| mode | MAPE | points | n/a | in interval |" . ($g eq "local" ? " target | fails above |" : "") . "\n|---|---:|---:|---:|---:|" . ($g eq "local" ? "---:|---:|" : "") . "\n";
  for my $mode (@order) {
    my $e = $n{$mode} ? $sum{$mode} / $n{$mode} : undef;
    my $es = defined $e ? sprintf("%.1f%%", $e) : "n/a";
    my $line = "| $label{$mode} | $es | " . ($n{$mode} // 0) . " | " . ($nna{$mode} // 0) . " | " . ($inside{$mode} // 0) . " of " . ($n{$mode} // 0) . " |";
    my $verdict = "";
    if ($g eq "local") {
      $line .= " $target{$mode}% | " . (2 * $target{$mode}) . "% |";
      if (defined $e && $e > 2 * $target{$mode}) { $fail = 1; $verdict = "  OVER twice the target"; }
      elsif (defined $e && $e > $target{$mode}) { $verdict = "  (over the target)"; }
      $txt .= sprintf("MAPE %-13s %8s over %2d points (target %d%%)%s; in the interval: %d\n", $label{$mode}, $es, $n{$mode} // 0, $target{$mode}, $verdict, $inside{$mode} // 0);
    } else {
      $txt .= sprintf("MAPE %-13s %8s over %2d points; in the interval: %d\n", $label{$mode}, $es, $n{$mode} // 0, $inside{$mode} // 0);
    }
    $md .= "$line\n";
  }
  if ($net{$g}) {
    my $t = $net{$g}{table}; my $pp = $t->{pingpong};
    my $last = $pp->[-1];
    $md .= sprintf("\nThe network as `mpicast bench network --quick` measured it (%s shaper, nominal %g Mbit/s and %g ms one way): ".
      "one-way latency %s at 0 B, %.2f MB/s at %d B; fitted segments: %s.\n",
      $net{$g}{shaper}, $net{$g}{rate} / 1e6, $net{$g}{delay} / 1000, fmt($pp->[0]{median_s}),
      $last->{size_bytes} / $last->{median_s} / 1e6, $last->{size_bytes},
      join("; ", map { $_->{bandwidth_bytes_per_s} >= 1e12
          ? sprintf("from %d B: %s (flat: the time does not grow with the size there)", $_->{from_bytes}, fmt($_->{latency_s}))
          : sprintf("from %d B: %s + s / %.2f MB/s", $_->{from_bytes}, fmt($_->{latency_s}), $_->{bandwidth_bytes_per_s} / 1e6) } @{$t->{segments}}));
  }
  for my $note (@{$notes{$g} // []}) { $md .= "\nNote: $note\n"; $txt .= "note: $note\n"; }
}
for my $g (@groups) {
  next if $rows{$g};
  for my $note (@{$notes{$g} // []}) { $md .= "\n## $g\n\n$note\n"; $txt .= "$g: $note\n"; }
}
if (@reason_list) {
  $md .= "\n## Why a mode was n/a\n\n";
  $txt .= "\n";
  for my $k (0 .. $#reason_list) { $md .= ($k + 1) . ". $reason_list[$k]\n"; $txt .= "[" . ($k + 1) . "] $reason_list[$k]\n"; }
}
my $first = $rows{local} ? $rows{local}[0] : (map { $rows{$_}[0] } grep { $rows{$_} } @groups)[0];
my $plat = $first ? $first->{platform} : "-";
my $mach = $first ? $first->{machine} : "-";
my $head = "# Accuracy\n\n" .
  "Measured by `make accuracy` (scripts/accuracy.sh) on $ENV{ACC_DATE} (about $ENV{ACC_MINUTES} min).\n\n" .
  "- Machine: $ENV{ACC_CPU}, $ENV{ACC_CORES} cores (host $ENV{ACC_HOST}); load average (1, 5, 15 min) " .
  "$ENV{ACC_LOAD_BEFORE} before, $ENV{ACC_LOAD_AFTER} after. The machine is shared with other work: " .
  "timings are taken under that load.\n" .
  "- Real runs: `mpicast validate` builds each example with mpicc -O2 and runs it per rank count ($ENV{ACC_RUNS} runs) " .
  "with `mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none` " .
  "(ranks beyond $ENV{ACC_CORES} cores are oversubscribed); the time compared is the median of the run\x27s span " .
  "(MPI_Init\x27s return to MPI_Finalize\x27s call on the slowest rank, from a preloaded PMPI library: what a prediction " .
  "covers; mpirun\x27s start-up is not in it), the min beside it.\n" .
  "- Predictions (`mpicast predict --ops $ENV{ACC_OPS}`, one per mode): static (skeleton execution, no run), trace counts " .
  "(`--trace-ranks N`: block counts of an instrumented run, costed by the machine table), block benchmarking " .
  "(`--trace-ranks N --measured`: measured burst times), scaled (`--trace-ranks K -n N`, K the smallest rank " .
  "count below N that is at least 2, else 1). Platform: $plat; machine table: $mach (this host, as `mpicast predict` " .
  "measures and caches them).\n" .
  "- Error = (predicted - measured median) / measured median; MAPE = mean of |error| over the rows where the mode predicted. " .
  "Targets on this host: static 20%, trace counts 15%, block benchmarking 10%, scaled 15%; the benchmark fails only " .
  "when a mode is over twice its target on this host\x27s rows.\n";
# The sections from "## Trace scaling" to the end (written by bench_scale.sh and by hand) are kept as they were.
my $keep = "";
if (open(my $old, "<", $ENV{ACC_OUT})) {
  local $/;
  my $t = <$old>;
  close $old;
  $keep = "\n$1" if $t =~ /(^## Trace scaling.*)\z/ms;
}
open(my $o, ">", $ENV{ACC_OUT}) or die "$ENV{ACC_OUT}: $!";
print $o $head . $md . $keep;
close $o;
print $txt;
print "\nwrote $ENV{ACC_OUT}\n";
exit($fail ? 1 : 0);
' "$manifest"
status=$?
if [ $status = 1 ]; then echo "accuracy: a mode is over twice its target" >&2; fi
exit $status
