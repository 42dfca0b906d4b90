#!/usr/bin/env bash
# The layering docs/ARCHITECTURE.md states, checked (`make test` runs it first):
#   - no cycle between the folders of src/ (src/a uses crate::b and src/b, directly or through
#     other folders, uses crate::a);
#   - src/mpi and src/platform are leaves: they use crate::model and nothing else of the crate.
# A folder uses another when one of its files names `crate::<other>` (`use crate::{a, b::c}`
# groups included) or reaches the crate root with `super::` (from a mod.rs, `super::<other>`).
# Comments do not count: a doc comment may name a module it does not import.
#
# Usage: scripts/check_layers.sh [ROOT] (default: the repository this script is in). Prints
# each offending edge with the file and line that makes it; exits 1 if there is one, else 0.
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"

exec perl - <<'PERL'
use strict;
use warnings;

my %leaf_may_use = (mpi => ["model"], platform => ["model"]);

opendir(my $dh, "src") or die "check_layers: no src/ in " . `pwd`;
my @entries = readdir($dh);
closedir($dh);
my @folders = sort grep { !/^\./ && -d "src/$_" } @entries;
die "check_layers: no folder in src/\n" unless @folders;
# The crate root modules: the folders, and any file module beside lib.rs (none today).
my %module = map { $_ => 1 } @folders,
    map { /^(\w+)\.rs$/ && $1 ne "lib" && $1 ne "main" ? $1 : () } @entries;

# edges{from}{to} = "file:line" of the first use found.
my %edges;
for my $from (@folders) {
    my @files = split /\n/, `find src/$from -name "*.rs" | sort`;
    for my $file (@files) {
        # src/a/b.rs is crate::a::b, so `super::super::` is the crate root there; from a
        # mod.rs one `super::` less. (Inside an inline module, such as tests, the same chain
        # stops short of the root: it then names no root module and is not counted.)
        my @parts = split m{/}, $file;
        my $depth = @parts - 1 - ($parts[-1] eq "mod.rs" ? 1 : 0);
        my $up = join "", ("super::") x $depth;
        open(my $fh, "<", $file) or die "check_layers: $file: $!\n";
        my $text = do { local $/; <$fh> };
        close $fh;
        # Comments and literals blanked (their newlines kept, so that lines stay the file's): a
        # doc comment may name a module it does not use, a string may hold "/*" or "//".
        $text =~ s{
            r(\#*)".*?"\1                  # raw string
          | "(?:[^"\\]|\\.)*"              # string
          | '(?:[^'\\\n]|\\.[^'\n]*)'      # character (a lifetime has no closing quote)
          | //[^\n]*                     # line comment
          | /\*.*?\*/                     # block comment
        }{ (my $c = $&) =~ s/[^\n]//g; $c }gsex;
        $text =~ s/\Q$up\E/crate::/g if $depth > 0;
        while ($text =~ /\bcrate\s*::\s*(\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}|[A-Za-z_][A-Za-z0-9_]*)/g) {
            my ($what, $at) = ($1, $-[0]);
            my $line = 1 + (substr($text, 0, $at) =~ tr/\n//);
            my @names;
            if ($what =~ /^\{(.*)\}$/s) {
                my $inner = $1;
                1 while $inner =~ s/\{[^{}]*\}//g;    # nested groups: only the first name counts
                @names = map { /^\s*([A-Za-z_][A-Za-z0-9_]*)/ ? $1 : () } split /,/, $inner;
            } else {
                @names = ($what);
            }
            for my $to (@names) {
                next if $to eq $from || !$module{$to};
                $edges{$from}{$to} //= "$file:$line";
            }
        }
    }
}

my $failed = 0;

# Leaves.
for my $leaf (sort keys %leaf_may_use) {
    next unless $module{$leaf};
    my %ok = map { $_ => 1 } @{ $leaf_may_use{$leaf} };
    for my $to (sort keys %{ $edges{$leaf} // {} }) {
        next if $ok{$to};
        print "src/$leaf -> crate::$to ($edges{$leaf}{$to}): src/$leaf may use only ",
            join(", ", map { "crate::$_" } @{ $leaf_may_use{$leaf} }), "\n";
        $failed = 1;
    }
}

# Cycles: the folders that reach each other (a strongly connected component) are named, with
# the shortest cycle among them, every edge with the line that makes it. (Breaking that cycle
# and running again shows the next one, if any.)
sub reach {
    my ($from) = @_;
    my %seen = ($from => 1);
    my @todo = ($from);
    while (defined(my $n = shift @todo)) {
        for my $m (keys %{ $edges{$n} // {} }) {
            push @todo, $m unless $seen{$m}++;
        }
    }
    return \%seen;
}
sub shortest_cycle {
    my ($start, $in) = @_;
    my %prev = ($start => undef);
    my @todo = ($start);
    while (defined(my $n = shift @todo)) {
        for my $m (sort keys %{ $edges{$n} // {} }) {
            next unless $in->{$m};
            if ($m eq $start) {
                my @p = ($n);
                unshift @p, $prev{ $p[0] } while defined $prev{ $p[0] };
                return (@p, $start);
            }
            next if exists $prev{$m};
            $prev{$m} = $n;
            push @todo, $m;
        }
    }
    return ();
}
my %reach = map { $_ => reach($_) } @folders;
my %done;
for my $f (@folders) {
    next if $done{$f};
    my @scc = grep { $reach{$f}{$_} && $reach{$_}{$f} } @folders;
    $done{$_} = 1 for @scc;
    next if @scc < 2;
    my %in = map { $_ => 1 } @scc;
    my @best;
    for my $n (@scc) {
        my @c = shortest_cycle($n, \%in);
        @best = @c if @c && (!@best || @c < @best);
    }
    print "cycle between ", join(", ", map { "src/$_" } @scc), "; the shortest:\n";
    for my $i (0 .. $#best - 1) {
        print "  src/$best[$i] -> crate::$best[$i + 1] ($edges{$best[$i]}{$best[$i + 1]})\n";
    }
    $failed = 1;
}

if ($failed) {
    print "check_layers: the layering docs/ARCHITECTURE.md states is broken (see above)\n";
    exit 1;
}
my $n = 0;
$n += keys %{ $edges{$_} } for keys %edges;
print "check_layers: ", scalar(@folders), " folders of src/, $n edges: no cycle; src/mpi and src/platform use only crate::model\n";
PERL
