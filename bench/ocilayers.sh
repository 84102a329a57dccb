#!/usr/bin/env bash
# A container image of many layers straight into an image, against
# unpacking it first (issue "OCI images as input"), side by side in one
# run. bench/ocilayers makes an OCI layout of LAYERS (25) gzip layers from
# SRC (default the Go source tree): the tree, then layers that replace,
# white out and add files and make directories opaque. Then, cold cache
# before each run, order alternating over ROUNDS (3):
#
#   oci      mkdwarfs -i oci:LAYOUT:bench
#   unpack   umoci unpack --rootless, then mkdwarfs -i BUNDLE/rootfs
#            (its wall is the sum, its peak RSS the larger of the two;
#            "dir" is the mkdwarfs part alone)
#
# Wall time and peak RSS (GNU time), medians and ratios oci/unpack and
# oci/dir; the two images must extract to the same files.
#
#   LEVEL=7 bench/ocilayers.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
SRC=${SRC:-$(go env GOROOT)/src}
LEVEL=${LEVEL:-7}
ROUNDS=${ROUNDS:-3}
LAYERS=${LAYERS:-25}
need umoci
need /usr/bin/time
ensure_bin mkdwarfs dwarfsextract
work=${WORK:-$BENCH_DIR/ocilayers}
mkdir -p "$work"
if [[ ! -f $work/layout.done ]]; then
	log "making a $LAYERS-layer image of $SRC"
	rm -rf "$work/layout"
	(cd "$REPO_ROOT" && go run ./bench/ocilayers -src "$SRC" -o "$work/layout" -layers "$LAYERS") 2>/dev/null
	touch "$work/layout.done"
fi
mk=("$BIN/mkdwarfs" -l "$LEVEL" --no-progress --log-level warn --no-history --no-create-timestamp -f)
cold() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }
# timed OUT CMD...: GNU time's wall seconds and peak RSS (KiB) into OUT.
timed() {
	local out=$1
	shift
	/usr/bin/time -f '%e %M' -o "$out" "$@" >/dev/null
}
declare -a w_oci w_unpack w_dir r_oci r_unpack r_dir
run_oci() {
	cold
	timed "$work/t" "${mk[@]}" -i "oci:$work/layout:bench" -o "$work/oci.dwarfs"
	read -r w r <"$work/t"
	w_oci+=("$w") r_oci+=("$r")
}
run_unpack() {
	rm -rf "$work/bundle"
	cold
	timed "$work/t1" umoci unpack --rootless --image "$work/layout:bench" "$work/bundle"
	timed "$work/t2" "${mk[@]}" -i "$work/bundle/rootfs" -o "$work/dir.dwarfs"
	read -r w1 r1 <"$work/t1"
	read -r w2 r2 <"$work/t2"
	w_unpack+=("$(awk -v a="$w1" -v b="$w2" 'BEGIN { print a + b }')")
	r_unpack+=("$((r1 > r2 ? r1 : r2))")
	w_dir+=("$w2") r_dir+=("$r2")
}
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
for ((i = 0; i < ROUNDS; i++)); do
	log "round $((i + 1)) of $ROUNDS"
	if ((i % 2 == 0)); then run_oci; run_unpack; else run_unpack; run_oci; fi
done
rm -rf "$work/x1" "$work/x2"
"$BIN/dwarfsextract" -i "$work/oci.dwarfs" -o "$work/x1"
"$BIN/dwarfsextract" -i "$work/dir.dwarfs" -o "$work/x2"
diff -r "$work/x1" "$work/x2" >/dev/null || die "the images differ"
rm -rf "$work/x1" "$work/x2" "$work/bundle"
wo=$(median "${w_oci[@]}") wu=$(median "${w_unpack[@]}") wd=$(median "${w_dir[@]}")
ro=$(median "${r_oci[@]}") ru=$(median "${r_unpack[@]}") rd=$(median "${r_dir[@]}")
echo "## $LAYERS-layer image of $SRC, -l $LEVEL, medians of $ROUNDS"
machine_note
echo "| | wall s | peak RSS MiB |"
echo "|---|---|---|"
echo "| oci | $wo | $(awk -v a="$ro" 'BEGIN { printf "%.1f", a / 1024 }') |"
echo "| umoci unpack + dir | $wu | $(awk -v a="$ru" 'BEGIN { printf "%.1f", a / 1024 }') |"
echo "| dir alone | $wd | $(awk -v a="$rd" 'BEGIN { printf "%.1f", a / 1024 }') |"
echo "| oci / (unpack + dir) | $(ratio "$wo" "$wu") | $(ratio "$ro" "$ru") |"
echo "| oci / dir | $(ratio "$wo" "$wd") | $(ratio "$ro" "$rd") |"
echo "- runs: oci ${w_oci[*]} s, unpack+dir ${w_unpack[*]} s, dir ${w_dir[*]} s"
