#!/usr/bin/env bash
# make bench-compare: godwarfs mkdwarfs beside the reference mkdwarfs on the
# same corpora and levels: image size, wall time, CPU time, peak RSS, as
# ratios godwarfs/reference; then the null-image cross-recompression, which
# separates ordering and segmenting from the encoder: each tool's `-C null`
# image is recompressed by both tools with the level's block codec.
# The reference tools are used when REF_DWARFS names the directory that
# holds their mkdwarfs (and dwarfsck, dwarfsextract); without it only the
# godwarfs side runs and the reason is printed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

LEVELS=${LEVELS:-"7 9"}
CHECK=${CHECK:-1}
if [[ -z ${CORPORA:-} ]]; then
	CORPORA=xtools8
	if [[ -n ${REDIS_MIRROR:-} ]]; then CORPORA+=" redis"; else CORPORA+=" gomods"; fi
	# A few large blocks of binaries, and the CDNJS-like tree (4.8 GB;
	# each build of it takes minutes: CORPORA without it for a quick run).
	CORPORA+=" binblocks cdnjs"
fi
export CORPORA

need /usr/bin/time "Debian package time"
ensure_bin mkdwarfs dwarfsck
GO_MK=$BIN/mkdwarfs

REF_MK=
if [[ -z ${REF_DWARFS:-} ]]; then
	REF_NOTE="skipped: REF_DWARFS is not set (point it at the directory with the reference mkdwarfs, dwarfsck, dwarfsextract)"
elif [[ ! -x $REF_DWARFS/mkdwarfs ]]; then
	REF_NOTE="skipped: no executable $REF_DWARFS/mkdwarfs"
else
	REF_MK=$REF_DWARFS/mkdwarfs
	REF_NOTE="reference: $("$REF_MK" --help 2>&1 | grep -m1 -o 'mkdwarfs (v[^)]*)')"
fi
log "$REF_NOTE"

"$(dirname "$0")/corpus.sh" >/dev/null

OUT=$BENCH_DIR/compare
RES=$BENCH_DIR/results
mkdir -p "$OUT" "$RES"
stamp=$(date -u +%Y%m%d-%H%M%S)
report=$RES/compare-$stamp.md
logf=$RES/compare-$stamp.log

# codec LEVEL: the block codec of that level (the same in both tools).
codec() {
	"$GO_MK" -H | awk -v l="$1" '$1 == l && $2 ~ /^[0-9]+$/ {print $3; exit}'
}

# measure NAME OUTPUT CMD...: runs CMD under GNU time; sets M_SIZE (bytes of
# OUTPUT), M_WALL, M_CPU (user+sys seconds), M_RSS (peak KiB).
measure() {
	local name=$1 out=$2; shift 2
	rm -f "$out"
	local tf; tf=$(mktemp)
	log "$name: $*"
	if ! /usr/bin/time -f '%e %U %S %M' -o "$tf" "$@" >>"$logf" 2>&1; then
		cat "$tf" >>"$logf"
		rm -f "$tf"
		die "$name failed (see $logf)"
	fi
	read -r M_WALL u s M_RSS <"$tf"
	rm -f "$tf"
	M_CPU=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
	M_SIZE=$(stat -c %s "$out")
}

# verify IMAGE DIR: the reference dwarfsck --check-integrity accepts the
# image, and the reference dwarfsextract gives back DIR exactly.
verify() {
	local img=$1 dir=$2
	[[ $CHECK == 1 && -n $REF_MK ]] || return 0
	"$REF_DWARFS/dwarfsck" --check-integrity -i "$img" >>"$logf" 2>&1 ||
		die "reference dwarfsck --check-integrity rejects $img"
	local x=$OUT/extract
	rm -rf "$x" && mkdir -p "$x"
	"$REF_DWARFS/dwarfsextract" -i "$img" -o "$x" >>"$logf" 2>&1 ||
		die "reference dwarfsextract fails on $img"
	diff -r --no-dereference "$dir" "$x" >>"$logf" 2>&1 ||
		die "reference dwarfsextract of $img differs from $dir"
	rm -rf "$x"
	log "verified $(basename "$img") with the reference dwarfsck and dwarfsextract"
}

fmt_bytes() { echo "$1" | sed -e ':a' -e 's/\B[0-9]\{3\}\>/,&/' -e 'ta'; }

{
	echo "# mkdwarfs: godwarfs beside the reference"
	echo
	machine_note
	echo "- godwarfs: $(git -C "$REPO_ROOT" describe --always --dirty 2>/dev/null || echo unknown); encoders: $("$GO_MK" -H | sed -n 's/^  \(zstd\|lzma\) .*(\(.*\))$/\1: \2/p' | paste -sd ';')"
	echo "- $REF_NOTE"
	echo "- ratios are godwarfs / reference: below 1.00 = godwarfs smaller, faster or leaner"
	echo
} >"$report"

for c in $CORPORA; do
	check_corpus "$c"
	dir=$(corpus_dir "$c")
	desc="$(du -sb "$dir" | awk '{printf "%.0f MB", $1 / 1e6}'), $(find "$dir" -type f | wc -l) files"
	{
		echo "## $c ($desc)"
		echo
		echo "| level | tool | image bytes | wall s | CPU s | peak RSS MiB | size ratio | wall ratio | CPU ratio | RSS ratio |"
		echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	} >>"$report"
	for l in $LEVELS; do
		gi=$OUT/$c-go-l$l.dwarfs ri=$OUT/$c-ref-l$l.dwarfs
		measure "godwarfs -l$l $c" "$gi" "$GO_MK" -i "$dir" -o "$gi" -l "$l" --log-level=warn
		gs=$M_SIZE gw=$M_WALL gc=$M_CPU gr=$M_RSS
		verify "$gi" "$dir"
		if [[ -n $REF_MK ]]; then
			measure "reference -l$l $c" "$ri" "$REF_MK" -i "$dir" -o "$ri" -l "$l" --log-level=warn
			rs=$M_SIZE rw=$M_WALL rc=$M_CPU rr=$M_RSS
			echo "| $l | reference | $(fmt_bytes "$rs") | $rw | $rc | $(mib $((rr * 1024))) | | | | |" >>"$report"
		else
			rs=n/a rw=n/a rc=n/a rr=n/a
		fi
		echo "| $l | godwarfs | $(fmt_bytes "$gs") | $gw | $gc | $(mib $((gr * 1024))) | $(ratio "$gs" "$rs") | $(ratio "$gw" "$rw") | $(ratio "$gc" "$rc") | $(ratio "$gr" "$rr") |" >>"$report"
	done

	{
		echo
		echo "Cross-recompression: each tool's \`-l L -C null\` image (its ordering and segments), recompressed by each tool with the level's block codec (\`--recompress -l L\`)."
		echo
		echo "| level | codec | null image from | null bytes | recompressed by godwarfs | recompressed by reference | godwarfs order / reference order (same encoder) |"
		echo "|---|---|---|---:|---:|---:|---:|"
	} >>"$report"
	for l in $LEVELS; do
		spec=$(codec "$l")
		declare -A X=()
		for src in go ref; do
			[[ $src == ref && -z $REF_MK ]] && continue
			mk=$GO_MK
			[[ $src == ref ]] && mk=$REF_MK
			n=$OUT/$c-$src-l$l-null.dwarfs
			measure "$src -l$l -C null $c" "$n" "$mk" -i "$dir" -o "$n" -l "$l" -C null --log-level=warn
			X[$src-null]=$M_SIZE
			for enc in go ref; do
				[[ $enc == ref && -z $REF_MK ]] && continue
				emk=$GO_MK
				[[ $enc == ref ]] && emk=$REF_MK
				r=$OUT/$c-$src-l$l-null-by-$enc.dwarfs
				measure "$enc recompresses $src null -l$l" "$r" "$emk" -i "$n" -o "$r" --recompress -l "$l" --log-level=warn
				X[$src-$enc]=$M_SIZE
			done
		done
		for src in go ref; do
			[[ -n ${X[$src-null]:-} ]] || continue
			name=godwarfs
			[[ $src == ref ]] && name=reference
			byg=${X[$src-go]:-n/a} byr=${X[$src-ref]:-n/a}
			cmp=
			if [[ $src == go ]]; then
				cmp="by godwarfs $(ratio "${X[go-go]:-}" "${X[ref-go]:-}"), by reference $(ratio "${X[go-ref]:-}" "${X[ref-ref]:-}")"
			fi
			echo "| $l | $spec | $name | $(fmt_bytes "${X[$src-null]}") | $([[ $byg == n/a ]] && echo n/a || fmt_bytes "$byg") | $([[ $byr == n/a ]] && echo n/a || fmt_bytes "$byr") | $cmp |" >>"$report"
		done
		unset X
	done
	echo >>"$report"
done

echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$report"
cp "$report" "$RES/compare-latest.md"
cat "$report"
