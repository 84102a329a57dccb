#!/usr/bin/env bash
# Append against a full build (issue "images that grow"): the first N-1
# release trees of a corpus built at -l LEVEL, the N-th appended; then the
# full build of all N at the same level. Reports wall times and sizes and
# checks that the appended image extracts to the same files as the source.
#
#   CORPUS=redis LEVEL=7 bench/append.sh
#
# The corpus directory holds one directory per release; releases are
# ordered by version (sort -V). Trees are hard-linked into a work
# directory (the scanner stores each entry once, so this changes nothing).
# STEPS=10 appends the last ten one at a time, checking every intermediate
# image; FULL=SECONDS:IMAGE reuses a full build timed before; WORK is the
# work directory.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CORPUS=${CORPUS:-redis}
LEVEL=${LEVEL:-7}
STEPS=${STEPS:-1}
check_corpus "$CORPUS"
ensure_bin mkdwarfs dwarfsck dwarfsextract
src=$(corpus_dir "$CORPUS")
work=${WORK:-$BENCH_DIR/append-$CORPUS}
rm -rf "$work"
mkdir -p "$work"
mapfile -t rel < <(ls "$src" | sort -V)
n=${#rel[@]}
first=$((n - STEPS))
log "$CORPUS: $n releases; building ${rel[0]}..${rel[first-1]}, appending ${rel[*]:first}"
mkdir -p "$work/base" "$work/all"
for r in "${rel[@]:0:first}"; do cp -al "$src/$r" "$work/base/$r"; done
for r in "${rel[@]}"; do cp -al "$src/$r" "$work/all/$r"; done
mk=("$BIN/mkdwarfs" -l "$LEVEL" --no-progress --log-level warn -N "${WORKERS:-2}")
t() { local s; s=$(now_ns); "$@"; secs "$s" "$(now_ns)"; }
base_s=$(t "${mk[@]}" -i "$work/base" -o "$work/base.dwarfs")
img=$work/base.dwarfs
app_total=0
for ((i = first; i < n; i++)); do
	r=${rel[i]}
	out=$work/step$i.dwarfs
	s=$(t "${mk[@]}" -i "$img" --append "$src/$r" --append-at "$r" -o "$out")
	log "append $r: ${s}s, $(stat -c %s "$out") bytes"
	app_total=$(awk -v a="$app_total" -v b="$s" 'BEGIN { print a + b }')
	"$BIN/dwarfsck" --check-integrity "$out" >/dev/null
	rm -rf "$work/x" && mkdir "$work/x"
	"$BIN/dwarfsextract" -i "$out" -o "$work/x"
	for c in "${rel[0]}" "${rel[@]:first:i-first+1}"; do
		diff -r --no-dereference "$src/$c" "$work/x/$c" >/dev/null || die "step $i: $c extracts differently"
	done
	rm -rf "$work/x"
	[[ $img == "$work/base.dwarfs" ]] || rm -f "$img"
	img=$out
done
if [[ -n ${FULL:-} ]]; then
	# FULL=SECONDS:IMAGE reuses a full build of the same releases.
	full_s=${FULL%%:*}
	cp "${FULL#*:}" "$work/all.dwarfs"
else
	full_s=$(t "${mk[@]}" -i "$work/all" -o "$work/all.dwarfs")
fi
base_b=$(stat -c %s "$work/base.dwarfs")
app_b=$(stat -c %s "$img")
full_b=$(stat -c %s "$work/all.dwarfs")
printf '%-34s %10s %14s\n' "$CORPUS -l$LEVEL" "wall s" "bytes"
printf '%-34s %10s %14s\n' "build of $first releases" "$base_s" "$base_b"
printf '%-34s %10s %14s\n' "$STEPS append(s) to it" "$app_total" "$app_b"
printf '%-34s %10s %14s\n' "full build of $n releases" "$full_s" "$full_b"
printf 'append wall / full build wall: %s; appended size / full size: %s\n' "$(ratio "$app_total" "$full_s")" "$(ratio "$app_b" "$full_b")"
