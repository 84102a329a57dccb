#!/usr/bin/env bash
# make bench-categorize: mkdwarfs with and without --categorize on a tree
# that mixes text with already compressed data (.gz, .png, .zip) and shared
# libraries: image size and wall/CPU time (median of RUNS builds), as
# ratios --categorize/plain for each tool and godwarfs/reference for each
# setting; then the time to read every file back out of each image
# (dwarfsextract to a tar on /dev/null). With the reference tools present
# (REF_DWARFS) the same builds run with the reference mkdwarfs, and every
# godwarfs image must pass the reference dwarfsck --check-integrity. Every
# godwarfs image is extracted and compared with the tree.
#
#   SRC     tree to use (default: the "mixed" corpus, made once in
#           $BENCH_DIR/corpus/mixed from /usr/share/doc, /usr/share/icons,
#           module zips in the Go module cache and a few libraries)
#   LEVEL   compression level (default 7)
#   RUNS    builds per setting (default 3; the median is reported)
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ensure_bin mkdwarfs dwarfsck dwarfsextract
need /usr/bin/time "apt-get install time"
LEVEL=${LEVEL:-7}
RUNS=${RUNS:-3}

make_mixed() { # the mixed corpus, from what a Debian machine with Go has
	local dir=$BENCH_DIR/corpus/mixed
	[[ -f $dir.ready ]] && { echo "$dir"; return; }
	log "making the mixed corpus in $dir"
	rm -rf "$dir" && mkdir -p "$dir/doc" "$dir/icons" "$dir/zips" "$dir/lib"
	cp -a /usr/share/doc/[a-g]* "$dir/doc/" 2>/dev/null
	cp -a /usr/share/icons/. "$dir/icons/" 2>/dev/null
	local tot=0 f s cache
	cache=$(go env GOMODCACHE 2>/dev/null)/cache/download
	while read -r f; do
		s=$(stat -c %s "$f")
		((tot + s > 25000000)) && break
		tot=$((tot + s))
		cp "$f" "$dir/zips/$(printf '%s' "$f" | md5sum | cut -c1-8)-${f##*/}"
	done < <(find "$cache" -name '*.zip' -size +200k -size -3M 2>/dev/null | sort)
	for f in /usr/lib/x86_64-linux-gnu/lib{crypto,ssl,sqlite3,stdc++,xml2}.so.?; do
		[[ -e $f ]] && cp -L "$f" "$dir/lib/"
	done
	touch "$dir.ready"
	echo "$dir"
}

SRC=${SRC:-$(make_mixed)}
[[ -d $SRC ]] || die "no source tree $SRC"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/godwarfs-cat.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$BENCH_DIR/results"
OUT=$BENCH_DIR/results/categorize-latest.md

tools=(godwarfs)
if [[ -n ${REF_DWARFS:-} && -x $REF_DWARFS/mkdwarfs ]]; then
	tools+=(reference)
else
	echo "reference: skipped: reference tools not installed (set REF_DWARFS to the directory of the reference mkdwarfs)"
fi

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A SIZE WALL CPU READ
for tool in "${tools[@]}"; do
	mk=$BIN/mkdwarfs
	[[ $tool == reference ]] && mk=$REF_DWARFS/mkdwarfs
	for mode in plain categorize; do
		args=(-i "$SRC" -l "$LEVEL" -f --no-progress --log-level=error)
		[[ $mode == categorize ]] && args+=(--categorize)
		img=$WORK/$tool-$mode.dwarfs
		walls=() cpus=()
		for ((r = 1; r <= RUNS; r++)); do
			log "$tool $mode run $r/$RUNS"
			/usr/bin/time -f '%e %U %S' -o "$WORK/time" "$mk" "${args[@]}" -o "$img" >/dev/null 2>"$WORK/err" ||
				{ cat "$WORK/err" >&2; die "$tool mkdwarfs $mode failed"; }
			read -r e u s <"$WORK/time"
			walls+=("$e") cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')")
		done
		key=$tool-$mode
		SIZE[$key]=$(stat -c %s "$img")
		WALL[$key]=$(printf '%s\n' "${walls[@]}" | median)
		CPU[$key]=$(printf '%s\n' "${cpus[@]}" | median)
		# Read everything back: median of RUNS extractions to a tar.
		reads=()
		for ((r = 1; r <= RUNS; r++)); do
			t0=$(now_ns)
			"$BIN/dwarfsextract" -i "$img" -f gnutar -o /dev/null || die "extracting $img failed"
			reads+=("$(secs "$t0" "$(now_ns)")")
		done
		READ[$key]=$(printf '%s\n' "${reads[@]}" | median)
		if [[ $tool == godwarfs ]]; then
			rm -rf "$WORK/x" && mkdir "$WORK/x"
			"$BIN/dwarfsextract" -i "$img" -o "$WORK/x" && diff -r --no-dereference "$SRC" "$WORK/x" >/dev/null ||
				die "$img: extracted tree differs from $SRC"
			rm -rf "$WORK/x"
			if [[ ${#tools[@]} -gt 1 ]]; then
				"$REF_DWARFS/dwarfsck" --check-integrity "$img" >/dev/null 2>&1 || die "$img: reference dwarfsck --check-integrity fails"
			fi
		fi
	done
done

{
	echo "# mkdwarfs --categorize, -l $LEVEL (median of $RUNS)"
	echo
	machine_note
	echo "- tree: $SRC ($(du -sb "$SRC" | cut -f1) bytes, $(find "$SRC" -type f | wc -l) files)"
	echo
	echo "| tool | setting | image bytes | wall s | CPU s | read s |"
	echo "|---|---|---:|---:|---:|---:|"
	for tool in "${tools[@]}"; do
		for mode in plain categorize; do
			k=$tool-$mode
			echo "| $tool | $mode | ${SIZE[$k]} | ${WALL[$k]} | ${CPU[$k]} | ${READ[$k]} |"
		done
	done
	echo
	echo "| tool | size cat/plain | wall cat/plain | CPU cat/plain | read cat/plain |"
	echo "|---|---:|---:|---:|---:|"
	for tool in "${tools[@]}"; do
		p=$tool-plain c=$tool-categorize
		echo "| $tool | $(ratio "${SIZE[$c]}" "${SIZE[$p]}") | $(ratio "${WALL[$c]}" "${WALL[$p]}") | $(ratio "${CPU[$c]}" "${CPU[$p]}") | $(ratio "${READ[$c]}" "${READ[$p]}") |"
	done
	if [[ ${#tools[@]} -gt 1 ]]; then
		echo
		echo "| setting | size godwarfs/ref | wall godwarfs/ref | CPU godwarfs/ref | read godwarfs/ref |"
		echo "|---|---:|---:|---:|---:|"
		for mode in plain categorize; do
			g=godwarfs-$mode r=reference-$mode
			echo "| $mode | $(ratio "${SIZE[$g]}" "${SIZE[$r]}") | $(ratio "${WALL[$g]}" "${WALL[$r]}") | $(ratio "${CPU[$g]}" "${CPU[$r]}") | $(ratio "${READ[$g]}" "${READ[$r]}") |"
		done
		echo
		echo "(read: both tools' images are read with the godwarfs dwarfsextract.)"
	fi
} | tee "$OUT"
