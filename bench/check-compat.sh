#!/usr/bin/env bash
# make check-compat: build images with godwarfs at every level, codec,
# packing option and rewrite, then check each with the reference tools:
# dwarfsck (summary, -d 3, --json, --check-integrity, --list),
# dwarfsextract (compared with the source tree) and a reference FUSE mount
# (compared likewise).
#
#   REF_DWARFS  directory with the reference mkdwarfs, dwarfsck,
#               dwarfsextract and dwarfs binaries (required; without it the
#               check prints "skipped" and exits 0)
#   BIN         godwarfs binaries (default <repo>/bin; built if missing)
#   SRC         source tree (default: the reference fixture tree, extracted
#               from testdata/fixtures/reference/images/default.dwarfs)
#   CASES       subset of case names to run
#   KEEP=1      keep the work directory
set -uo pipefail
. "$(dirname "$0")/lib.sh"

if [[ -z ${REF_DWARFS:-} ]]; then
	echo "skipped: reference tools not installed (set REF_DWARFS to the directory holding the reference dwarfsck, dwarfsextract and dwarfs)"
	exit 0
fi
for t in dwarfsck dwarfsextract dwarfs; do
	[[ -x $REF_DWARFS/$t ]] || { echo "skipped: reference tools not installed ($REF_DWARFS/$t missing)"; exit 0; }
done
ensure_bin mkdwarfs dwarfsck dwarfsextract dwarfs
need python3

WORK=$(mktemp -d "${TMPDIR:-/tmp}/godwarfs-compat.XXXXXX")
MNT=$WORK/mnt
mkdir -p "$MNT"
cleanup() {
	mountpoint -q "$MNT" 2>/dev/null && { fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"; }
	[[ ${KEEP:-0} == 1 ]] && log "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

if [[ -z ${SRC:-} ]]; then
	fix=$REPO_ROOT/testdata/fixtures/reference/images/default.dwarfs
	[[ -f $fix ]] || die "no SRC given and $fix not found"
	SRC=$WORK/src
	"$BIN/dwarfsextract" -i "$fix" -o "$SRC" || die "extracting the fixture tree failed"
fi

# CASE lines: name | build options | rewrite options (empty: none).
# Every image is built with devices and specials, so the whole tree is kept.
read -r -d '' MATRIX <<'LIST'
l0|-l 0|
l1|-l 1|
l2|-l 2|
l3|-l 3|
l4|-l 4|
l5|-l 5|
l6|-l 6|
l7|-l 7|
l8|-l 8|
l9|-l 9|
null|-C null|
zstd3|-C zstd:level=3|
zstd22|-C zstd:level=22|
lzma1|-C lzma:level=1|
lz4|-C lz4|
lz4hc|-C lz4hc:level=9|
brotli|-C brotli:quality=5|
zstd-neg|-C zstd:level=-5|
lzma-opts|-C lzma:level=6:mode=fast:mf=hc4:nice=32:depth=16|
lzma-x86|-C lzma:level=6:binary=x86|
pack-all|-P all|
pack-none|-P none|
pack-plain|-P plain|
pack-shared|-P shared_files,chunk_table,directories|
small-blocks|-S 16|
no-history|--no-history|
no-index|--no-section-index|
no-sparse|--no-sparse-files|
times-ns|--time-resolution ns --keep-all-times|
times-min|--time-resolution min|
history-full||
header|--header HEADER|
categorize|-S 20 --categorize|
categorize-frag|-S 20 --categorize --incompressible-fragments --incompressible-block-size 64k -C incompressible::lz4 --order=incompressible::path|
rw-categorize|-S 20 --categorize|--recompress -C lzma:level=1 --recompress-categories=<default>
rw-recompress|-S 20|--recompress -C lzma:level=1
rw-recompress-meta|-S 20|--recompress=metadata --metadata-compression null
rw-rebuild|-S 20|--rebuild-metadata -P all
rw-rebuild-times|-S 20 --keep-all-times|--rebuild-metadata --time-resolution 60
rw-block-size|-S 20|--change-block-size -S 16
rw-twice|-S 20|--recompress -C zstd:level=3 ; --rebuild-metadata -P none
grow-append|-S 20|APPEND -l 3
grow-append-pack|-S 18 -P all --keep-all-times|APPEND -C lz4
grow-merge|-S 20|MERGE -S 16 -C lzma:level=1
grow-merge-cat|-S 20 --categorize|MERGE -l 1
LIST

printf '#!/bin/false\nheader\n' >"$WORK/header"
# tree_listing DIR: type and permissions of every entry, size and link
# target of files and symlinks, device numbers of devices. (Directory sizes
# depend on the filesystem holding the tree.)
tree_listing() {
	(
		cd "$1" || exit 1
		find . -mindepth 1 \( -type f -o -type l \) -printf '%P\t%y\t%m\t%s\t%l\n'
		find . -mindepth 1 ! -type f ! -type l ! -type b ! -type c -printf '%P\t%y\t%m\n'
		find . -mindepth 1 \( -type b -o -type c \) -exec stat -c '%n	%F	%a	%t:%T' {} + | sed 's#^\./##'
	) | sort
}
tree_listing "$SRC" >"$WORK/src.listing"
# The grow cases (APPEND, MERGE) build an image of the source without its
# largest top-level directory, then append that directory to it, or build
# it alone and merge the two images; the result must be the source tree.
GROWDIR=$(cd "$SRC" && find . -mindepth 1 -maxdepth 1 -type d -printf '%P\n' | while read -r d; do echo "$(find "$d" | wc -l) $d"; done | sort -k1,1nr -k2 | head -1 | cut -d' ' -f2-)
SRC1=$WORK/src-without
cp -a "$SRC" "$SRC1" && rm -rf "${SRC1:?}/$GROWDIR"

pass=0
fail=0
skipped=0
declare -a ROWS
check() { # check NAME DESC CMD...: run, record result
	local name=$1 desc=$2
	shift 2
	if "$@" >"$WORK/out" 2>&1; then
		return 0
	fi
	log "$name: $desc failed:"
	head -5 "$WORK/out" >&2
	return 1
}

same_tree() { # same_tree DIR: content and listing equal to the source
	# diff -r names every special file it cannot compare; the listing
	# compares those.
	diff -r --no-dereference "$SRC" "$1" 2>&1 | grep -Ev '^File .* is a (fifo|socket|character special file|block special file) while file .* is a (fifo|socket|character special file|block special file)$' >"$WORK/diff"
	[[ -s $WORK/diff ]] && { head -5 "$WORK/diff" >&2; return 1; }
	tree_listing "$1" | diff "$WORK/src.listing" - >"$WORK/diff" || { head -5 "$WORK/diff" >&2; return 1; }
}

while IFS='|' read -r name build rewrite; do
	[[ -z $name ]] && continue
	if [[ -n ${CASES:-} && " $CASES " != *" $name "* ]]; then continue; fi
	# lzma's mode, mf, nice and depth need liblzma (a cgo build); the
	# pure-Go encoder refuses them, as its --help says.
	if [[ $build == *lzma*mode=* ]] && ! "$BIN/mkdwarfs" -H 2>&1 | grep -q "LZMA compression (liblzma"; then
		log "$name: skipped: this build's lzma encoder is pure Go, which has no mode/mf/nice/depth"
		ROWS+=("$name|skipped: pure-Go lzma encoder|||||||"); skipped=$((skipped + 1)); continue
	fi
	img=$WORK/$name.dwarfs
	hist=(--no-history-timestamps)
	[[ $name == history-full ]] && hist=()
	in=$SRC
	[[ $rewrite == APPEND* || $rewrite == MERGE* ]] && in=$SRC1
	# shellcheck disable=SC2086
	if ! "$BIN/mkdwarfs" -i "$in" -o "$img" --with-devices --with-specials --progress none "${hist[@]}" ${build//HEADER/$WORK/header} >"$WORK/out" 2>&1; then
		log "$name: mkdwarfs failed"; head -5 "$WORK/out" >&2
		ROWS+=("$name|build failed|||||||"); fail=$((fail + 1)); continue
	fi
	if [[ $rewrite == APPEND* || $rewrite == MERGE* ]]; then
		# shellcheck disable=SC2086
		if [[ $rewrite == APPEND* ]]; then
			"$BIN/mkdwarfs" -i "$img" --append "$SRC/$GROWDIR" --append-at "$GROWDIR" -o "$img.new" --with-devices --with-specials --progress none ${rewrite#APPEND} >"$WORK/out" 2>&1
		else
			"$BIN/mkdwarfs" -i "$SRC/$GROWDIR" -o "$img.part" --with-devices --with-specials --progress none ${rewrite#MERGE} >"$WORK/out" 2>&1 &&
				"$BIN/mkdwarfs" --merge "$img" "$GROWDIR=$img.part" --merge-into-root -o "$img.new" --progress none >>"$WORK/out" 2>&1
		fi || { log "$name: '$rewrite' failed"; head -5 "$WORK/out" >&2; ROWS+=("$name|$rewrite failed|||||||"); fail=$((fail + 1)); continue; }
		mv "$img.new" "$img"
		rewrite=""
	fi
	if [[ -n $rewrite ]]; then
		IFS=';' read -ra steps <<<"$rewrite"
		for step in "${steps[@]}"; do
			# shellcheck disable=SC2086
			if ! "$BIN/mkdwarfs" -i "$img" -o "$img.new" --progress none $step >"$WORK/out" 2>&1; then
				log "$name: rewrite '$step' failed"; head -5 "$WORK/out" >&2
				img=""; break
			fi
			mv "$img.new" "$img"
		done
		[[ -z $img ]] && { ROWS+=("$name|rewrite failed|||||||"); fail=$((fail + 1)); continue; }
	fi
	r=()
	ok=1
	res() { if "$@"; then r+=(ok); else r+=(FAIL); ok=0; fi; }
	res check "$name" "dwarfsck" sh -c '"$1/dwarfsck" "$2" >"$3/summary" && { [ "$4" = no-history ] || grep -q "^History:" "$3/summary"; }' _ "$REF_DWARFS" "$img" "$WORK" "$name"
	res check "$name" "dwarfsck -d 3" "$REF_DWARFS/dwarfsck" -d 3 "$img"
	res check "$name" "dwarfsck --json" sh -c '"$1/dwarfsck" --json "$2" | python3 -m json.tool >/dev/null' _ "$REF_DWARFS" "$img"
	res check "$name" "dwarfsck --check-integrity" "$REF_DWARFS/dwarfsck" --check-integrity "$img"
	res check "$name" "dwarfsck --list" sh -c '"$1/dwarfsck" --list "$2" | sort | diff - "$3"' _ "$REF_DWARFS" "$img" <(cut -f1 "$WORK/src.listing")
	rm -rf "$WORK/x" && mkdir "$WORK/x"
	res check "$name" "dwarfsextract" "$REF_DWARFS/dwarfsextract" -i "$img" -o "$WORK/x"
	[[ ${r[-1]} == ok ]] && { same_tree "$WORK/x" || { r[-1]=FAIL; ok=0; log "$name: extracted tree differs"; }; }
	if "$REF_DWARFS/dwarfs" "$img" "$MNT" -o ro,offset=auto >"$WORK/out" 2>&1; then
		if same_tree "$MNT"; then r+=(ok); else r+=(FAIL); ok=0; log "$name: mounted tree differs"; fi
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
	else
		log "$name: reference mount failed"; head -5 "$WORK/out" >&2; r+=(FAIL); ok=0
	fi
	ROWS+=("$name|$(IFS='|'; echo "${r[*]}")|$(stat -c %s "$img")")
	if [[ $ok == 1 ]]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done <<<"$MATRIX"

# categories IMG: the reference dwarfsck's view of IMG's categories: the
# category_names order (the summary lists them in that order; --json sorts
# them by name), each category's block count and uncompressed size
# (--json), then every regular file with the categories of the blocks its
# data is in (-d section_details,directory_tree,chunk_details).
categories() {
	echo "order:" $("$REF_DWARFS/dwarfsck" "$1" | sed -n '/^categories:/,/^[^ ]/s/^  \([^ ].*\): [0-9]* blocks.*/\1/p')
	"$REF_DWARFS/dwarfsck" --json "$1" >"$WORK/cat.json" || return 1
	"$REF_DWARFS/dwarfsck" -d section_details,directory_tree,chunk_details "$1" >"$WORK/cat.txt" || return 1
	python3 - "$WORK/cat.json" "$WORK/cat.txt" <<'PY'
import json, re, sys
cats = json.load(open(sys.argv[1])).get("categories") or {}
for name, c in cats.items():
    print(f"category {name}: {c['block_count']} blocks, {c['uncompressed_size']} bytes")
blockcat, files, stack, cur = {}, {}, [], None
for line in open(sys.argv[2]):
    line = line.rstrip("\n")
    m = re.match(r"SECTION .*num=(\d+), type=BLOCK, .*category=(.*)$", line)
    if m:
        blockcat[int(m.group(1))] = m.group(2)
        continue
    m = re.match(r"^( *)<inode:\d+> (\S+) (.*)$", line)
    if m:
        depth, mode, rest = len(m.group(1)) // 2, m.group(2), m.group(3)
        del stack[depth:]
        kind = mode[-10]
        if kind == "d":
            stack.append(re.sub(r" ?\(\d+ entries, parent=\d+\)$", "", rest))
            cur = None
        elif kind == "-":
            cur = "/".join([d for d in stack if d] + [re.sub(r" \[\d+, \d+\] \d+( \(allocated: \d+\))?$", "", rest)])
            files[cur] = set()
        else:
            cur = None
        continue
    m = re.search(r"-> DATA \(block=(\d+),", line)
    if m and cur is not None:
        files[cur].add(blockcat.get(int(m.group(1)), "?"))
for f in sorted(files):
    print(f"{f}\t{','.join(sorted(files[f])) or '-'}")
PY
}

# analysis_file: both drivers write the same list for the same reads; the
# reference mkdwarfs and ours turn it into the same hotness category (same
# category names, block counts and sizes, and the same files in each), with
# the hotness categorizer alone and before and after the incompressible
# one; the reference checks our images' integrity, and our driver preloads
# the category.
hot() {
	local img=$WORK/hot-src.dwarfs drv list
	"$BIN/mkdwarfs" -i "$SRC" -o "$img" --progress none >/dev/null 2>&1 || return 1
	# The three largest files (tiny ones may all be deduplicated into
	# other files' blocks), read out of size order.
	mapfile -t files < <(cd "$SRC" && find . -type f -printf '%s %P\n' | sort -k1,1nr -k2 | head -3 | cut -d' ' -f2- | awk '{l[NR] = $0} END {print l[1]; print l[3]; print l[2]}')
	for drv in ref ours; do
		if [[ $drv == ref ]]; then
			"$REF_DWARFS/dwarfs" "$img" "$MNT" -o "offset=auto,analysis_file=$WORK/hot.$drv" || return 1
		else
			"$BIN/dwarfs" "$img" "$MNT" -o "analysis_file=$WORK/hot.$drv" || return 1
		fi
		for f in "${files[@]}" "${files[0]}"; do cat "$MNT/$f" >/dev/null; done
		fusermount3 -u "$MNT" || return 1
	done
	diff "$WORK/hot.ref" "$WORK/hot.ours" || return 1
	[[ $(wc -l <"$WORK/hot.ours") == "${#files[@]}" ]] || return 1
	list=$WORK/hot.ours
	# -W 0: the two segmenters find slightly different matches (a few
	# hundred bytes on the fixture tree), so without segment search the
	# category sizes can be compared exactly.
	for cats in hotness hotness,incompressible incompressible,hotness; do
		"$REF_DWARFS/mkdwarfs" -i "$SRC" -o "$WORK/hot-ref.dwarfs" -f -S 20 -W 0 --categorize=$cats --hotness-list="$list" >/dev/null 2>&1 || { echo "reference mkdwarfs --categorize=$cats failed"; return 1; }
		"$BIN/mkdwarfs" -i "$SRC" -o "$WORK/hot-ours.dwarfs" -f -S 20 -W 0 --progress none --categorize=$cats --hotness-list="$list" || return 1
		categories "$WORK/hot-ref.dwarfs" >"$WORK/hot-ref.cats" || return 1
		categories "$WORK/hot-ours.dwarfs" >"$WORK/hot-ours.cats" || return 1
		grep -q '^category hotness:' "$WORK/hot-ref.cats" || { echo "--categorize=$cats: no hotness category in the reference's image"; return 1; }
		diff -u --label "reference --categorize=$cats" --label "godwarfs --categorize=$cats" "$WORK/hot-ref.cats" "$WORK/hot-ours.cats" || return 1
		"$REF_DWARFS/dwarfsck" --check-integrity "$WORK/hot-ours.dwarfs" >/dev/null || return 1
	done
	"$BIN/dwarfs" "$WORK/hot-ours.dwarfs" "$MNT" -o preload_category=hotness || return 1
	fusermount3 -u "$MNT"
	"$BIN/dwarfs" "$WORK/hot-ref.dwarfs" "$MNT" -o preload_category=hotness || return 1
	fusermount3 -u "$MNT"
}
if [[ -z ${CASES:-} || " $CASES " == *" hotness "* ]]; then
	if check hotness "analysis_file and --hotness-list" hot; then
		ROWS+=("hotness|analysis_file lists match; reference and godwarfs --hotness-list give the same categories|||||||")
		pass=$((pass + 1))
	else
		ROWS+=("hotness|analysis_file/--hotness-list: FAIL|||||||")
		fail=$((fail + 1))
	fi
fi

echo
echo "Reference tools: $("$REF_DWARFS/dwarfsck" --help 2>&1 | grep -m1 -o 'dwarfsck ([^)]*)' || echo "$REF_DWARFS")"
echo
echo "| case | dwarfsck | -d 3 | --json | --check-integrity | --list | dwarfsextract | mount | image bytes |"
echo "|---|---|---|---|---|---|---|---|---:|"
for row in "${ROWS[@]}"; do echo "|${row//|/ | }|"; done
echo
echo "$pass passed, $fail failed, $skipped skipped"
[[ $fail == 0 ]]
