# A Perl program's allocation pattern: hashes of strings, regular
# expressions, sorting, arrays of arrays.  Written for hakmem's
# bench-programs.
use strict;
use warnings;

my $seed = 42;
sub rnd { $seed = ($seed * 1103515245 + 12345) % 2147483648; return $seed % $_[0]; }

my %count;
my @lines;
for my $i (1 .. 60000) {
    my $line = join(" ", map { "w" . rnd(3000) . ("x" x rnd(6)) } 1 .. 8);
    push @lines, $line;
}
for my $line (@lines) {
    for my $w (split / /, $line) {
        (my $stem = $w) =~ s/x+$//;
        $count{$stem}++;
    }
}
my @top = (sort { $count{$b} <=> $count{$a} || $a cmp $b } keys %count)[0 .. 9];

my %groups;
for my $i (0 .. $#lines) {
    my ($first) = $lines[$i] =~ /^(w\d+)/;
    push @{ $groups{$first} }, [$i, length $lines[$i]];
}
my $sum = 0;
for my $g (values %groups) {
    my @sorted = sort { $a->[1] <=> $b->[1] } @$g;
    $sum += $sorted[0][1];
}
@lines = grep { !/w1\d\d\b/ } @lines;
my $text = join("\n", @lines);
my $n = () = $text =~ /w(\d)\d*x{3}/g;

print scalar(keys %count), " @top[0..2] $sum ", scalar(@lines), " $n\n";
