#!/usr/bin/env perl
# Aggregates scripts/corpus.sh's per-program status files and mpicast's JSON outputs into
# results.json (a program reads) and docs/CORPUS.md (a person reads), from the same data.
use strict;
use warnings;
use JSON::PP;
use Getopt::Long;
use POSIX qw(strftime);

my ($manifest, $work, $set, $total_s, $json_out, $doc, $mpicast) = ('', '', 'full', 0, '', '', '');
GetOptions('manifest=s' => \$manifest, 'work=s' => \$work, 'set=s' => \$set, 'total-s=s' => \$total_s,
           'json=s' => \$json_out, 'doc=s' => \$doc, 'mpicast=s' => \$mpicast) or die "usage\n";
my @names = @ARGV;

my %man;
open my $mf, '<', $manifest or die "$manifest: $!\n";
while (<$mf>) {
    chomp;
    next if /^#/ || !/\S/;
    my @f = split /\t/;
    $man{$f[0]} = { package => $f[1], lang => $f[2], ranks => [split /,/, $f[3]], perf => $f[4] eq '1',
                    quick => $f[5] eq '1', sources => $f[6], flags => $f[7], libs => $f[8], args => $f[9] };
}
close $mf;

sub slurp_json {
    my ($p) = @_;
    return undef unless -s $p;
    open my $h, '<', $p or return undef;
    local $/;
    my $t = <$h>;
    close $h;
    my $v = eval { decode_json($t) };
    return $v;
}

my @programs;
for my $name (@names) {
    my $m = $man{$name} or next;
    my %s;
    if (open my $sf, '<', "$work/$name/status") {
        while (<$sf>) { chomp; my ($k, $v) = split /\t/, $_, 2; $s{$k} = $v // ''; }
        close $sf;
    }
    my $ok = sub { defined $s{"$_[0].rc"} && $s{"$_[0].rc"} eq '0' };
    my %p = (name => $name, package => $m->{package}, lang => $m->{lang}, perf => $m->{perf} ? JSON::PP::true : JSON::PP::false,
             sources => ($s{sources} // 0) + 0, lines => ($s{lines} // 0) + 0, trace_ranks => ($s{k} // 0) + 0);
    my %stages;
    my $stage = sub {
        my ($st) = @_;
        return undef unless defined $s{"$st.rc"};
        my $r = { ok => $ok->($st) ? JSON::PP::true : JSON::PP::false };
        $r->{skipped} = JSON::PP::true if $s{"$st.rc"} eq 'skip';
        $r->{wall_s} = $s{"$st.wall_s"} + 0 if defined $s{"$st.wall_s"};
        $r->{reason} = $s{"$st.reason"} if !$ok->($st) && defined $s{"$st.reason"};
        $r->{exit} = $s{"$st.rc"} + 0 if $s{"$st.rc"} =~ /^\d+$/;
        return $r;
    };
    $stages{build} = $stage->('build');
    for my $n (@{ $m->{ranks} }) { $stages{"run$n"} = $stage->("run$n") if defined $s{"run$n.rc"}; }
    $stages{analyze} = $stage->('analyze');
    if ($stages{analyze} && $stages{analyze}{ok}) {
        my $a = slurp_json("$work/$name/analysis.json");
        if ($a) {
            my @b = @{ $a->{blocks} // [] };
            my $st = grep { ($_->{count}{status} // '') ne 'needs_trace' } @b;
            $stages{analyze}{blocks} = scalar @b;
            $stages{analyze}{static_fraction} = @b ? $st / @b : undef;
            $stages{analyze}{diagnostics} = scalar @{ $a->{diagnostics} // [] };
            $stages{analyze}{comm_sites} = scalar @{ $a->{comm} // [] };
        }
    }
    $stages{trace} = $stage->('trace');
    my $k = $s{k} // 0;
    # The run's span (MPI_Init to MPI_Finalize, slowest rank) when the span library gave one,
    # else mpirun's wall clock.
    my $measured = !$ok->("run$k") ? undef : defined $s{"run$k.span_s"} ? $s{"run$k.span_s"} + 0 : $s{"run$k.wall_s"} + 0;
    $p{measured_what} = defined $s{"run$k.span_s"} ? 'span' : 'wall';
    $p{measured_s} = $measured;
    for my $mode (qw(static trace measured)) {
        my $r = $stage->("predict_$mode") or next;
        if ($r->{ok}) {
            my $pj = slurp_json("$work/$name/predict_$mode.json");
            if ($pj && defined $pj->{predicted_s}) {
                $r->{predicted_s} = $pj->{predicted_s} + 0;
                $r->{error_pct} = 100 * ($r->{predicted_s} - $measured) / $measured if $measured;
            }
        }
        $stages{"predict_$mode"} = $r;
    }
    # Scaling 2 -> 4: the 2-rank trace scaled against a 4-rank trace, both as trace counts.
    for my $st (qw(trace4 predict_real4 predict_scaled4)) {
        my $r = $stage->($st) or next;
        if ($r->{ok} && $st ne 'trace4') {
            my $pj = slurp_json("$work/$name/$st.json");
            if ($pj && defined $pj->{predicted_s}) {
                $r->{predicted_s} = $pj->{predicted_s} + 0;
                $r->{mode} = $pj->{mode} // '';
            }
        }
        $stages{$st} = $r;
    }
    $p{stages} = { map { $_ => $stages{$_} } grep { defined $stages{$_} } keys %stages };
    push @programs, \%p;
}

# --- aggregates ---------------------------------------------------------------------------------
my @stage_order = (qw(build run1 run2 run4 analyze trace predict_static predict_trace predict_measured));
my %stage_label = (build => 'build', run1 => 'runs at 1', run2 => 'runs at 2', run4 => 'runs at 4', analyze => 'mpicast analyze',
                   trace => 'mpicast trace', predict_static => 'predict (static)', predict_trace => 'predict (trace counts)',
                   predict_measured => 'predict (block benchmarking)');
my %summary;
for my $st (@stage_order) {
    my ($tried, $ok) = (0, 0);
    for my $p (@programs) {
        my $r = $p->{stages}{$st} or next;
        $tried++;
        $ok++ if $r->{ok};
    }
    $summary{$st} = { tried => $tried, ok => $ok };
}
# Failures grouped by cause: the reason with paths, numbers and names of the program taken out.
sub cause {
    my ($stage, $r) = @_;
    my $c = $r // 'no reason recorded';
    $c =~ s/^mpicast: //;
    $c =~ s{\S*/work/[^/]+/stage/}{}g;
    $c =~ s{\S*/\S*}{<path>}g;
    $c =~ s/\b\d+(\.\d+)?\b/N/g;
    $c =~ s/'[^']*'/'…'/g;
    $c =~ s/`[^`]*`/`…`/g;
    $c =~ s/‘[^’]*’/‘…’/g;
    $c = substr($c, 0, 160);
    my $st = $stage =~ /^run/ ? 'run' : $stage;
    return "$st: $c";
}
my %groups;
for my $p (@programs) {
    for my $st (@stage_order) {
        my $r = $p->{stages}{$st} or next;
        next if $r->{ok};
        my $key = cause($st, $r->{reason});
        push @{ $groups{$key}{programs} }, $p->{name} . ($st =~ /^run(\d+)/ ? "\@$1" : '');
        $groups{$key}{example} //= $r->{reason} // '';
    }
}
my @panics = grep { /panic/i } map { $_->{example} } values %groups;

my $host = `hostname`; chomp $host;
my ($cpu) = grep { /model name/ } split /\n/, (`cat /proc/cpuinfo 2>/dev/null` // '');
$cpu = $cpu ? ($cpu =~ s/.*:\s*//r) : 'unknown CPU';
my $cores = `nproc`; chomp $cores;
my $ompi = (split /\n/, `mpirun --version 2>/dev/null`)[0] // 'mpirun';
my $version = `$mpicast --version 2>/dev/null`; chomp $version; $version =~ s/^mpicast //;
my $commit = $ENV{MPICAST_COMMIT} // `git -C "\$(dirname "$mpicast")/../.." rev-parse --short HEAD 2>/dev/null`; chomp $commit;
my $date = strftime('%Y-%m-%d %H:%M UTC', gmtime);
my %pkgver;
for my $pk (qw(hpcc simgrid mpich openmpi netpipe)) {
    my $f = "$work/../tree/$pk/.unpacked";
    if (open my $h, '<', $f) { my $v = <$h>; chomp $v; $pkgver{$pk} = $v; close $h; }
}

my $result = {
    schema => 'mpicast/corpus', version => 1, date => $date, host => $host, cpu => $cpu, cores => $cores + 0,
    mpirun => $ompi, mpicast => $version, commit => $commit, set => $set, total_s => $total_s + 0,
    packages => \%pkgver, summary => \%summary, programs => \@programs,
    failures => [ map { { cause => $_, count => scalar @{ $groups{$_}{programs} }, programs => $groups{$_}{programs},
                          example => $groups{$_}{example} } } sort { @{ $groups{$b}{programs} } <=> @{ $groups{$a}{programs} } || $a cmp $b } keys %groups ],
};
if ($json_out) {
    open my $h, '>', $json_out or die "$json_out: $!\n";
    print $h JSON::PP->new->canonical->pretty->encode($result);
    close $h;
}

# --- docs/CORPUS.md -----------------------------------------------------------------------------
sub yn { my ($r) = @_; return '' unless $r; return $r->{skipped} ? '–' : ($r->{ok} ? 'ok' : 'FAIL'); }
sub secs { my ($v) = @_; return defined $v ? sprintf('%.2f', $v) : ''; }
sub pct { my ($v) = @_; return defined $v ? sprintf('%+.0f%%', $v) : ''; }
sub runcell {
    my ($p, $n) = @_;
    my $r = $p->{stages}{"run$n"} or return '·';
    return $r->{ok} ? secs($r->{wall_s}) : ($r->{reason} && $r->{reason} =~ /timed out/ ? 'timeout' : 'FAIL');
}
sub predcell {
    my ($r) = @_;
    return '' unless $r;
    return '–' if $r->{skipped};
    return 'FAIL' unless $r->{ok};
    return defined $r->{error_pct} ? pct($r->{error_pct}) : 'ok';
}

my @md;
push @md, '# The external corpus', '';
push @md, 'Real MPI programs from Debian source packages, fetched at run time (never committed) and put',
          'through every mpicast stage. Written by `scripts/corpus.sh` (`make corpus`; `make corpus CORPUS=quick`',
          'for the quick subset); the program list is `scripts/corpus/programs.tsv`, the full results (per stage',
          'exit status, wall time, first error line, predicted and measured seconds) are in',
          '`~/.cache/mpicast/corpus/results.json`.', '';
push @md, '## How this was measured', '';
push @md, "- Date: $date; command: `scripts/corpus.sh $set` (" . scalar(@programs) . " programs, ${\ sprintf('%.0f', $total_s)} s in all).";
push @md, "- Machine: $host, $cpu, $cores cores; $ompi; mpicast $version" . ($commit ? " (commit $commit)" : '') . '.';
push @md, '- Sources: ' . join(', ', map { "`$pkgver{$_}`" } sort keys %pkgver) . ' (Debian bookworm, `apt-get source --download-only`;',
          '  the upstream .orig tarballs, Debian\'s patches not applied).';
push @md, '- Each program is built with mpicc/mpicxx -O2 and its manifest flags, then run once at each of its rank',
          '  counts under `mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none`',
          "  (${\ ($ENV{RUN_TIMEOUT} // 60)} s limit), one run; the time compared is the run\'s span, MPI_Init\'s return to MPI_Finalize\'s",
          '  call on the slowest rank (instrument/mpicast_span.c preloaded into the ranks; what a prediction covers), else',
          "  mpirun's wall clock (start-up included, about 0.35 s here) for a program the library could not time.",
          '- mpicast stages: `mpicast analyze STAGE_DIR --cflags FLAGS`; `mpicast trace STAGE_DIR -n K --all-blocks',
          '  --cflags FLAGS --libs LIBS -- ARGS` (with the address probes on irregular references), and again with `--time-blocks`; `mpicast predict STAGE_DIR -n K --static-only --estimate-bulk` (no run: long loops over generated data estimated from their first iterations, listed in the assumptions), from the first trace (`--trace DIR`,',
          '  the counts: what `--trace-ranks K` does) and from the second with `--measured` (block benchmarking), each with `--json`.',
          '  K is 2 where the program runs at 2 ranks. STAGE_DIR holds the program\'s sources and the headers beside them.',
          '  The prediction error is against the measured run at K ranks: 100 x (predicted - measured) / measured.',
          '- Static fraction: blocks whose execution count the analysis gives (exact or symbolic) over all blocks.';
push @md, '';

push @md, '## Success per stage', '', '| stage | succeeded | of | share |', '|---|---:|---:|---:|';
for my $st (@stage_order) {
    my $s = $summary{$st};
    next unless $s->{tried};
    push @md, sprintf('| %s | %d | %d | %.0f%% |', $stage_label{$st}, $s->{ok}, $s->{tried}, 100 * $s->{ok} / $s->{tried});
}
push @md, '', 'A prediction stage counts as tried only where its input exists (trace modes need a trace).', '';

# Scaling 2 -> 4
my @sc = grep { $_->{stages}{predict_real4} && $_->{stages}{predict_real4}{ok} } @programs;
if (@sc) {
    push @md, '## Scaling 2 -> 4', '',
        'Where a program traces at 2 and 4 ranks: its 2-rank trace scaled to 4 (`predict -n 4 --trace TRACE2`, program',
        'scaling: the static path at 4 where it reproduces the 2-rank trace or the trace cannot be scaled) against a',
        'trace taken at 4 (`predict -n 4 --trace TRACE4`), trace counts both, the same machine table and platform.', '',
        '| program | from the 4-rank trace s | scaled s | difference | how |', '|---|---:|---:|---:|---|';
    my @d;
    for my $p (@sc) {
        my ($real, $sc) = ($p->{stages}{predict_real4}, $p->{stages}{predict_scaled4});
        if ($sc && $sc->{ok} && defined $sc->{predicted_s} && defined $real->{predicted_s}
            && ($real->{predicted_s} > 0 || $sc->{predicted_s} == 0)) {
            # Both 0 s (nothing between MPI_Init and MPI_Finalize is compute or a message): alike.
            my $diff = $real->{predicted_s} > 0 ? 100 * ($sc->{predicted_s} / $real->{predicted_s} - 1) : 0;
            push @d, abs($diff);
            push @md, sprintf('| %s | %.3g | %.3g | %+.1f%% | %s |', $p->{name}, $real->{predicted_s}, $sc->{predicted_s}, $diff, $sc->{mode});
        } else {
            my $why = $sc && $sc->{reason} ? $sc->{reason} : 'no prediction';
            $why =~ s/\|/\\|/g;
            push @md, sprintf('| %s | %.3g | FAIL | | %s |', $p->{name}, $real->{predicted_s} // 0, substr($why, 0, 160));
        }
    }
    @d = sort { $a <=> $b } @d;
    if (@d) {
        my $mean = 0; $mean += $_ for @d; $mean /= @d;
        my $within = grep { $_ <= 3 } @d;
        push @md, '', sprintf('- %d of %d scaled; within 3%%: %d; mean absolute difference %.1f%%, median %.1f%%, max %.1f%%.',
                              scalar @d, scalar @sc, $within, $mean, $d[int($#d / 2)], $d[-1]);
    }
    push @md, '';
}

# Performance set
my @perf = grep { $_->{perf} } @programs;
if (@perf) {
    push @md, '## Performance set', '',
        'Programs that do enough work to time (benchmarks and kernels meant to run 0.5 to 10 s). Measured at K ranks',
        'against each mode\'s prediction.', '',
        '| program | K | measured s | static s | error | trace s | error | measured-bursts s | error |', '|---|---:|---:|---:|---:|---:|---:|---:|---:|';
    my %abs;
    for my $p (@perf) {
        my @c = ($p->{name}, $p->{trace_ranks}, secs($p->{measured_s}));
        for my $mode (qw(static trace measured)) {
            my $r = $p->{stages}{"predict_$mode"};
            if ($r && $r->{ok} && defined $r->{predicted_s}) {
                push @c, secs($r->{predicted_s}), pct($r->{error_pct});
                push @{ $abs{$mode} }, abs($r->{error_pct}) if defined $r->{error_pct};
            } else {
                push @c, ($r && !$r->{skipped} ? 'FAIL' : '–'), '';
            }
        }
        push @md, '| ' . join(' | ', @c) . ' |';
    }
    push @md, '';
    for my $mode (qw(static trace measured)) {
        my @e = sort { $a <=> $b } @{ $abs{$mode} // [] };
        next unless @e;
        my $mean = 0; $mean += $_ for @e; $mean /= @e;
        my $med = $e[int($#e / 2)];
        push @md, sprintf('- %s: %d predictions, mean absolute error %.0f%%, median %.0f%%, max %.0f%%.',
                          $mode eq 'measured' ? 'block benchmarking' : $mode eq 'trace' ? 'trace counts' : 'static', scalar @e, $mean, $med, $e[-1]);
    }
    push @md, '';
}

push @md, '## Programs', '',
    'Runs: wall seconds at 1, 2, 4 ranks (· not run at that count). Predict columns: the error against the',
    'measured run at K ranks (ok: predicted, no measured run to compare), FAIL (see the failures below), – (no trace).', '',
    '| package | program | lines | build | run 1 | run 2 | run 4 | analyze | static | trace | static pred. | trace pred. | measured pred. |',
    '|---|---|---:|---|---:|---:|---:|---|---:|---|---:|---:|---:|';
for my $p (@programs) {
    my $s = $p->{stages};
    my $an = $s->{analyze};
    my $frac = $an && defined $an->{static_fraction} ? sprintf('%.0f%%', 100 * $an->{static_fraction}) : '';
    my @other = grep { !/^(1|2|4)$/ } @{ $man{$p->{name}}{ranks} };
    my $name = $p->{name} . ($p->{perf} ? ' (perf)' : '') . (@other ? ' (at ' . join(',', @other) . ')' : '');
    push @md, '| ' . join(' | ', $p->{package}, $name, $p->{lines}, yn($s->{build}), runcell($p, 1), runcell($p, 2), runcell($p, 4),
                              yn($an), $frac, yn($s->{trace}), predcell($s->{predict_static}), predcell($s->{predict_trace}),
                              predcell($s->{predict_measured})) . ' |';
}
push @md, '';
for my $p (grep { my $o = $_; grep { !/^(1|2|4)$/ } @{ $man{$o->{name}}{ranks} } } @programs) {
    my @o = grep { !/^(1|2|4)$/ } @{ $man{$p->{name}}{ranks} };
    for my $n (@o) {
        my $r = $p->{stages}{"run$n"} or next;
        push @md, "- $p->{name} at $n ranks: " . ($r->{ok} ? secs($r->{wall_s}) . ' s' : 'FAIL');
    }
}
push @md, '' if grep { my $o = $_; grep { !/^(1|2|4)$/ } @{ $man{$o->{name}}{ranks} } } @programs;

push @md, '## Failures by cause', '',
    'Each failed stage once, grouped by its first error line with paths and numbers taken out; the example is one',
    'program\'s line as it was.', '';
if (@panics) {
    push @md, '**mpicast panicked** (' . scalar(@panics) . ' cause' . (@panics > 1 ? 's' : '') . '): see the `panic` entries below.', '';
}
for my $f (@{ $result->{failures} }) {
    my $ex = $f->{example};
    $ex =~ s{\S*/work/[^/]+/stage/}{}g;
    $ex =~ s/\|/\\|/g;
    push @md, "- **$f->{cause}** ($f->{count}): " . join(', ', @{ $f->{programs} });
    push @md, "  - e.g. `$ex`" if $ex ne '' && $ex ne $f->{cause};
}
push @md, '' ;
if ($doc) {
    open my $h, '>', $doc or die "$doc: $!\n";
    print $h join("\n", @md), "\n";
    close $h;
}
# Terminal summary
printf "%-30s %5s %5s\n", 'stage', 'ok', 'of';
for my $st (@stage_order) {
    my $s = $summary{$st};
    next unless $s->{tried};
    printf "%-30s %5d %5d\n", $stage_label{$st}, $s->{ok}, $s->{tried};
}
printf "%d failure causes; %s\n", scalar @{ $result->{failures} }, $doc ? "wrote $doc" : '';
