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
# timed OUT CMD...: GNU time's wall seconds, peak RSS (KiB) and CPU
# seconds (user + system) into OUT.
timed() {
	local out=$1
	shift
	/usr/bin/time -f '%e %M %U %S' -o "$out" "$@" >/dev/null
}
declare -a w_oci w_unpack w_dir r_oci r_unpack r_dir c_oci c_unpack c_dir
cpu() { awk -v a="$1" -v b="$2" 'BEGIN { print a + b }'; }
run_oci() {
	cold
	timed "$work/t" "${mk[@]}" -i "oci:$work/layout:bench" -o "$work/oci.dwarfs"
	read -r w r u s <"$work/t"
	w_oci+=("$w") r_oci+=("$r") c_oci+=("$(cpu "$u" "$s")")
}
run_unpack() {
	rm -rf "$work/bundle"
	cold
	timed "$work/t1" umoci unpack --rootless --image "$work/layout:bench" "$work/bundle"
	timed "$work/t2" "${mk[@]}" -i "$work/bundle/rootfs" -o "$work/dir.dwarfs"
	read -r w1 r1 u1 s1 <"$work/t1"
	read -r w2 r2 u2 s2 <"$work/t2"
	w_unpack+=("$(cpu "$w1" "$w2")")
	r_unpack+=("$((r1 > r2 ? r1 : r2))")
	c_unpack+=("$(awk -v a="$u1" -v b="$s1" -v c="$u2" -v d="$s2" 'BEGIN { print a + b + c + d }')")
	w_dir+=("$w2") r_dir+=("$r2") c_dir+=("$(cpu "$u2" "$s2")")
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
co=$(median "${c_oci[@]}") cu=$(median "${c_unpack[@]}") cd=$(median "${c_dir[@]}")
echo "## $LAYERS-layer image of $SRC, -l $LEVEL, medians of $ROUNDS"
machine_note
kib() { awk -v a="$1" 'BEGIN { printf "%.1f", a / 1024 }'; }
echo "| | wall s | CPU s | peak RSS MiB |"
echo "|---|---|---|---|"
echo "| oci | $wo | $co | $(kib "$ro") |"
echo "| umoci unpack + dir | $wu | $cu | $(kib "$ru") |"
echo "| dir alone | $wd | $cd | $(kib "$rd") |"
echo "| oci / (unpack + dir) | $(ratio "$wo" "$wu") | $(ratio "$co" "$cu") | $(ratio "$ro" "$ru") |"
echo "| oci / dir | $(ratio "$wo" "$wd") | $(ratio "$co" "$cd") | $(ratio "$ro" "$rd") |"
echo "- wall of each round: oci ${w_oci[*]} s, unpack+dir ${w_unpack[*]} s, dir ${w_dir[*]} s"
