#!/usr/bin/env bash
# make check-ricepp: FITS trees packed by the reference mkdwarfs with
# --categorize=fits (image data in RICEPP blocks) at several levels,
# ricepp block sizes and block sizes, then read by godwarfs: dwarfsck
# --check-integrity, dwarfsextract compared with the source, and every
# RICEPP block decoded and re-encoded by block/ricepp, which must give
# the reference's payload byte for byte. Prints one line per case and
# "N passed, M failed"; exit 1 on any failure.
#
#   REF_DWARFS  directory with the reference mkdwarfs (without it the
#               check prints "skipped")
#   BIN         godwarfs binaries (default <repo>/bin; built if missing)
#   CASES       subset of case names to run
set -uo pipefail
. "$(dirname "$0")/lib.sh"

if [[ -z ${REF_DWARFS:-} || ! -x ${REF_DWARFS:-}/mkdwarfs ]]; then
	echo "skipped: reference tools not installed (set REF_DWARFS to the directory holding the reference mkdwarfs)"
	exit 0
fi
ensure_bin dwarfsck dwarfsextract
need go

WORK=$(mktemp -d "${TMPDIR:-/tmp}/godwarfs-ricepp.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The tree: the generated FITS files (with two large images) and the
# reference's two sample files, taken from a committed fixture image.
TREE=$WORK/tree
mkdir -p "$TREE" "$WORK/img"
(cd "$REPO_ROOT" && go run ./testdata/fixtures/codecs/ricepp/genfits.go -big "$TREE") || die "genfits failed"
"$BIN/dwarfsextract" -i "$REPO_ROOT/testdata/fixtures/codecs/ricepp/fits-l9.dwarfs" -o "$WORK/fixture" || die "extracting the fixture failed"
cp "$WORK/fixture/dark.fits" "$WORK/fixture/test.fits" "$TREE/"

declare -A OPTS=(
	[l1]="-l1" [l4]="-l4" [l7]="-l7" [l9]="-l9"
	[bs16]="-C fits/image::ricepp:block_size=16"
	[bs17]="-C fits/image::ricepp:block_size=17"
	[bs100]="-C fits/image::ricepp:block_size=100"
	[bs255]="-C fits/image::ricepp:block_size=255"
	[bs512]="-C fits/image::ricepp:block_size=512"
	[S10-bs64]="-S 10 -C fits/image::ricepp:block_size=64"
	[S12-l9-bs512]="-S 12 -l9 -C fits/image::ricepp:block_size=512"
	[S16-bs32]="-S 16 -C fits/image::ricepp:block_size=32"
)
cases=${CASES:-"l1 l4 l7 l9 bs16 bs17 bs100 bs255 bs512 S10-bs64 S12-l9-bs512 S16-bs32"}
pass=0 fail=0
for c in $cases; do
	img=$WORK/img/$c.dwarfs out=$WORK/out-$c
	# shellcheck disable=SC2086
	if ! "$REF_DWARFS/mkdwarfs" -i "$TREE" -o "$img" --categorize=fits --log-level=error ${OPTS[$c]}; then
		echo "$c: reference mkdwarfs failed"; fail=$((fail + 1)); continue
	fi
	why=""
	"$BIN/dwarfsck" -i "$img" --check-integrity >/dev/null || why+=" dwarfsck"
	mkdir -p "$out" && "$BIN/dwarfsextract" -i "$img" -o "$out" && diff -r "$TREE" "$out" >/dev/null || why+=" extract"
	rm -rf "$out"
	if [[ -z $why ]]; then
		printf '%-14s ok   %9d bytes\n' "$c" "$(stat -c %s "$img")"; pass=$((pass + 1))
	else
		printf '%-14s FAIL%s\n' "$c" "$why"; fail=$((fail + 1))
	fi
done
if (cd "$REPO_ROOT" && GODWARFS_RICEPP_IMAGES="$WORK/img/*.dwarfs" go test -count=1 -run '^TestReferenceRiceppBlocks$' ./block/ >"$WORK/reencode.log" 2>&1); then
	echo "re-encode: every RICEPP block identical to the reference's"; pass=$((pass + 1))
else
	cat "$WORK/reencode.log"; fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
