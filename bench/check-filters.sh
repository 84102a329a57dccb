#!/usr/bin/env bash
# make check-filters: the filter rules of the reference manual and of the
# rule-set tests in dedup/filter_test.go, run by both mkdwarfs on the same
# small trees. Compares every --debug-filter mode on the manual's example
# (as sorted sets: the reference prints in scan order, godwarfs sorted) and,
# for each rule set, the listing of an image built with --remove-empty-dirs.
#
#   REF_DWARFS  directory with the reference mkdwarfs and dwarfsck (without
#               it the check prints "skipped" and exits 0)
#   BIN         godwarfs binaries (default <repo>/bin; built if missing)
set -uo pipefail
. "$(dirname "$0")/lib.sh"

if [[ -z ${REF_DWARFS:-} || ! -x ${REF_DWARFS:-}/mkdwarfs || ! -x ${REF_DWARFS:-}/dwarfsck ]]; then
	echo "skipped: reference tools not installed (set REF_DWARFS to the directory holding the reference mkdwarfs and dwarfsck)"
	exit 0
fi
ensure_bin mkdwarfs dwarfsck

WORK=$(mktemp -d "${TMPDIR:-/tmp}/godwarfs-filters.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# mktree DIR PATH...: empty files (a trailing / makes a directory).
mktree() {
	local d=$1 p; shift
	for p in "$@"; do
		if [[ $p == */ ]]; then mkdir -p "$d/$p"; else mkdir -p "$d/$(dirname "$p")" && echo "$p" >"$d/$p"; fi
	done
}

pass=0 fail=0
verdict() { # verdict NAME: compare $WORK/ref and $WORK/ours
	if cmp -s "$WORK/ref" "$WORK/ours"; then
		pass=$((pass + 1)); printf '%-32s same (%d lines)\n' "$1" "$(wc -l <"$WORK/ref")"
	else
		fail=$((fail + 1)); printf '%-32s DIFFERENT\n' "$1"; diff "$WORK/ref" "$WORK/ours" | sed 's/^/    /'
	fi
}

# The manual's example: keep Perl modules under File/Spec starting with E
# or M, drop .pl files under any unicore directory, keep other .pl files.
mktree "$WORK/perl" File/Spec/Mac.pm bin/perldoc.pl lib/perl5/File/Spec.pm \
	lib/perl5/File/Spec/Epoc.pm lib/perl5/File/Spec/Mac.pm lib/perl5/File/Spec/Unix.pm \
	lib/perl5/File/Spec/Functions.pm lib/perl5/File/Spec/Mac.pl lib/perl5/Pod/File/Spec/Epoc.pm \
	lib/perl5/XFile/Spec/Mac.pm lib/perl5/unicore/Name.pl lib/perl5/unicore/Name.pm \
	lib/perl5/unicore/lib/Nv/53.pl lib/perl5/unicore.pl lib/perl5/utf8_heavy.pl lib/perl5/README \
	lib/perl5/dir.pl/x.pm lib/perl5/empty/ unicore/Top.pl
printf '%s\n' '+ File/Spec/[EM]*.pm' '- unicore/**.pl' '+ *.pl' '- *' >"$WORK/perl.rules"
for mode in included included-files excluded excluded-files files all; do
	for tool in ref ours; do
		mk=$BIN/mkdwarfs; [[ $tool == ref ]] && mk=$REF_DWARFS/mkdwarfs
		"$mk" -i "$WORK/perl" -o /dev/null -F ". $WORK/perl.rules" --debug-filter="$mode" 2>&1 |
			sed "s|$WORK/perl/||" | sort >"$WORK/$tool"
	done
	verdict "manual example, $mode"
done

# Rule sets on a small /usr-like tree, checked through the image listing.
mktree "$WORK/usr" lib/libpcprofile.so lib/ld.conf usr/lib/Mcrt1.o usr/lib/libc.a \
	usr/lib/gcc/x86_64/11/crtbegin.o usr/lib/gcc/x86_64/11/libitm.so \
	usr/lib/python3/lib-dynload/_asyncio.so usr/lib64/gcrt1.o usr/lib64/xtables/libxt_LED.so \
	usr/lib64/xtables/libxt_LED.txt usr/share/doc/README
while IFS='|' read -r name rules; do
	[[ -n $name ]] || continue
	tr ';' '\n' <<<"$rules" >"$WORK/rules"
	for tool in ref ours; do
		d=$BIN; [[ $tool == ref ]] && d=$REF_DWARFS
		rm -f "$WORK/img"
		if "$d/mkdwarfs" -i "$WORK/usr" -o "$WORK/img" -l0 --remove-empty-dirs -F ". $WORK/rules" >/dev/null 2>&1; then
			"$d/dwarfsck" --list "$WORK/img" 2>&1 | sort >"$WORK/$tool"
		else
			echo "mkdwarfs failed" >"$WORK/$tool"
		fi
	done
	verdict "rules: $name"
done <<'LIST'
shared objects|+ *.so;- *
objects outside gcc|- gcc/**.o;+ *.o;- *
case matters|+ mc*;+ *led*;- *
ignore case|+i mc*;+i *led*;- *
directory rules|- gcc/;- share/;- /lib/
anchored|+ /usr/lib/*.a;+ /lib/*;- *
braces and classes|+ *.{a,conf};+ [A-Z]*;- *
globstar subtree|- /usr/**
LIST

echo
echo "$pass same, $fail different"
[[ $fail == 0 ]]
