#!/usr/bin/env bash
# perl.sh: perl programs with hakmem preloaded behave exactly as with glibc.
. "$(dirname "$0")/lib.sh"
programs perl
export PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0

compare "perl: hashes, sorting and digests" perl -MDigest::MD5=md5_hex -e '
my %h;
$h{"key" . ($_ * 7919 % 200000)} = [$_, "v" x ($_ % 50)] for 1 .. 200000;
delete $h{"key$_"} for grep { $_ % 3 == 0 } 1 .. 200000;
my @k = sort keys %h;
print scalar(@k), " ", md5_hex(join ",", @k[0 .. 999]), "\n";
my $s = join "", map { chr(65 + $_ % 26) x ($_ % 40) } 1 .. 100000;
(my $t = $s) =~ s/([AEIOU])+/lc $1/ge;
print length($s), " ", length($t), " ", md5_hex($t), "\n";
'

compare "perl: data structures, Storable and JSON::PP" perl -MStorable=dclone -MJSON::PP -e '
my $data = { map { ("n$_" => { list => [1 .. $_ % 100], text => "x" x $_ }) } 1 .. 3000 };
my $copy = dclone($data);
my $json = JSON::PP->new->canonical->encode($copy);
my $back = JSON::PP->new->decode($json);
print length($json), " ", scalar(keys %$back), " ", $back->{n1499}{list}[-1], "\n";
'

compare "perl: threads" perl -e '
use threads; use threads::shared;
my @results :shared;
my @t = map { my $k = $_; threads->create(sub {
	my %h; $h{$_} = "v" x ($_ % 64) for 1 .. 50000;
	my $sum = 0; $sum += length($h{$_}) for keys %h;
	{ lock(@results); push @results, "$k:$sum"; }
}) } 1 .. 4;
$_->join for @t;
print join(" ", sort @results), "\n";
'

compare "perl: fork and pipes" perl -e '
my @out;
for my $k (1 .. 8) {
	my $pid = open(my $fh, "-|") // die "fork: $!";
	if (!$pid) { my @a = map { $_ * $k } 1 .. 100000; print scalar(@a), " ", $a[-1], "\n"; exit 0 }
	push @out, scalar <$fh>;
	close $fh;
}
print @out;
'

finish
