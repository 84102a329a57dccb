#!/usr/bin/env bash
# How a build scales with cores: mkdwarfs (and the reference mkdwarfs when
# REF_DWARFS names its directory) build one corpus pinned with taskset to
# 1 and then 2 cores (-N and the scanner/ordering workers set to match),
# ROUNDS rounds alternating the tools. Reported: wall and CPU of each tool
# on each core count, godwarfs's phases (from its end-of-build table), the
# serial fraction that the 1->2 core speed-up implies (Karp-Flatt), and
# the wall that Amdahl's law then projects for 16 and 64 cores. The
# projection assumes the parallel part keeps scaling and the machine's
# memory and I/O keep up; it is a projection, not a measurement.
#
#   CORPUS=redis LEVEL=7 ROUNDS=1 REF_DWARFS=DIR bench/scale-cores.sh
#
# CORPUS is a corpus name of bench/corpus.sh or a directory. Output: a
# Markdown report on stdout, logs and images under $BENCH_DIR/scale-cores.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CORPUS=${CORPUS:-redis}
LEVEL=${LEVEL:-7}
ROUNDS=${ROUNDS:-1}
CORES=${CORES:-"1 2"}
need taskset "util-linux"
need /usr/bin/time "Debian package time"
ensure_bin mkdwarfs

if [[ -d $CORPUS ]]; then
	src=$CORPUS
else
	check_corpus "$CORPUS"
	src=$(corpus_dir "$CORPUS")
fi
ncpu=$(nproc)
for c in $CORES; do
	((c <= ncpu)) || die "CORES lists $c, this machine has $ncpu"
done
REF_MK=
if [[ -n ${REF_DWARFS:-} && -x $REF_DWARFS/mkdwarfs ]]; then
	REF_MK=$REF_DWARFS/mkdwarfs
else
	log "reference mkdwarfs skipped: REF_DWARFS is not set or has no mkdwarfs"
fi
work=$BENCH_DIR/scale-cores
mkdir -p "$work"

# run TOOL CORES ROUND: one pinned build; appends "tool cores wall cpu rss"
# to $work/runs and keeps godwarfs's phase table.
run() {
	local tool=$1 c=$2 r=$3 mk cpus img log
	cpus=$(seq -s, 0 $((c - 1)))
	img=$work/$tool-$c.dwarfs
	log=$work/$tool-$c-$r.log
	case $tool in
	godwarfs) mk=$BIN/mkdwarfs ;;
	reference) mk=$REF_MK ;;
	esac
	rm -f "$img"
	sync
	/usr/bin/time -f '%e %U %S %M' -o "$work/time" taskset -c "$cpus" "$mk" -i "$src" -o "$img" -l "$LEVEL" \
		-N "$c" --num-scanner-workers "$c" --num-segmenter-workers "$c" --no-progress --log-level=verbose >"$log" 2>&1 ||
		die "$tool on $c cores failed; see $log"
	read -r wall user sys rss <"$work/time"
	echo "$tool $c $wall $(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }') $rss $(stat -c %s "$img")" >>"$work/runs"
	log "$tool, $c core(s), round $r: ${wall}s wall"
}

: >"$work/runs"
for r in $(seq 1 "$ROUNDS"); do
	for c in $CORES; do
		run godwarfs "$c" "$r"
		[[ -z $REF_MK ]] || run reference "$c" "$r"
	done
done

# median of the runs of TOOL on CORES, field F (3 wall, 4 cpu, 5 rss, 6 size)
med() {
	awk -v t="$1" -v c="$2" -v f="$3" '$1 == t && $2 == c { print $f }' "$work/runs" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# amdahl T1 T2 N -> projected wall on N cores from the 1- and 2-core walls
amdahl() {
	awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN {
		if (a == "n/a" || b == "n/a" || b <= 0) { print "n/a"; exit }
		e = 2 * b / a - 1; if (e < 0) e = 0; if (e > 1) e = 1
		printf "%.1f", a * (e + (1 - e) / n) }'
}
serial() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a == "n/a" || b == "n/a" || b <= 0) { print "n/a"; exit }
		e = 2 * b / a - 1; if (e < 0) e = 0; if (e > 1) e = 1; printf "%.2f", e }'
}

first=${CORES%% *}
last=${CORES##* }
echo "## Build scaling: $(basename "$src"), -l$LEVEL, $ROUNDS round(s), medians"
echo
echo "| tool | cores | wall s | CPU s | cores busy | peak RSS MiB | image bytes |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for tool in godwarfs reference; do
	[[ $tool == godwarfs || -n $REF_MK ]] || continue
	for c in $CORES; do
		w=$(med "$tool" "$c" 3) u=$(med "$tool" "$c" 4)
		echo "| $tool | $c | $w | $u | $(ratio "$u" "$w") | $(awk -v k="$(med "$tool" "$c" 5)" 'BEGIN { printf "%.0f", k / 1024 }') | $(med "$tool" "$c" 6) |"
	done
done
echo
if [[ $first == 1 && $last == 2 ]]; then
	echo "Serial fraction from the 1->2 core speed-up (Karp-Flatt), and Amdahl's projection:"
	echo
	echo "| tool | serial fraction | projected wall, 16 cores | projected wall, 64 cores |"
	echo "|---|---:|---:|---:|"
	for tool in godwarfs reference; do
		[[ $tool == godwarfs || -n $REF_MK ]] || continue
		w1=$(med "$tool" 1 3) w2=$(med "$tool" 2 3)
		echo "| $tool | $(serial "$w1" "$w2") | $(amdahl "$w1" "$w2" 16) s | $(amdahl "$w1" "$w2" 64) s |"
	done
	echo
	# godwarfs's phases: the table its build prints, from round 1.
	echo "godwarfs by phase (round 1), projected phase by phase:"
	echo
	echo "| phase | wall 1 core | wall 2 cores | CPU 2 cores | serial fraction | projected 16 | projected 64 |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	t16=0 t64=0
	for ph in scanning ordering segmenting metadata compressing writing; do
		a=$(awk -v p="$ph" '$1 == p && NF == 6 { sub("s", "", $4); print $4 }' "$work/godwarfs-1-1.log")
		b=$(awk -v p="$ph" '$1 == p && NF == 6 { sub("s", "", $4); print $4 }' "$work/godwarfs-2-1.log")
		cpu=$(awk -v p="$ph" '$1 == p && NF == 6 { sub("s", "", $5); print $5 }' "$work/godwarfs-2-1.log")
		[[ -n $a && -n $b ]] || continue
		p16=$(amdahl "$a" "$b" 16) p64=$(amdahl "$a" "$b" 64)
		t16=$(awk -v x="$t16" -v y="$p16" 'BEGIN { printf "%.1f", x + y }')
		t64=$(awk -v x="$t64" -v y="$p64" 'BEGIN { printf "%.1f", x + y }')
		echo "| $ph | $a | $b | $cpu | $(serial "$a" "$b") | $p16 | $p64 |"
	done
	echo "| sum | | | | | $t16 | $t64 |"
	echo
	echo "Projections assume the parallel part keeps scaling and that memory bandwidth and I/O keep up."
fi
