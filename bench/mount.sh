#!/usr/bin/env bash
# make bench-mount: how long the FUSE drivers take to mount an image, side
# by side. Each round starts every driver once, in turn, after dropping
# the page cache: `DRIVER IMAGE MNT -f -o cachesize=512m`, timed until
# `mountpoint -q MNT` succeeds (polled every 10 ms), then its VmRSS right
# then and half a second later (the driver frees the heap its open left
# just after mounting), and the CPU time the driver used until mounted,
# which the load of a shared machine inflates less than wall time.
# Medians over the rounds, and each driver's ratio to the reference
# driver; the load average is printed with every round.
#
#   IMAGE        image to mount (default: the files1m image of make bench-scale)
#   ROUNDS       rounds (default 7)
#   BIN          directory with the godwarfs dwarfs binary (default <repo>/bin; built if missing)
#   REF_DWARFS   directory with the reference dwarfs driver; without it the
#                reference column is skipped with a printed reason
#   DRIVERS      more drivers to compare, as NAME=PATH words (e.g. an older build)
# Needs root (drop_caches, mount).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

IMAGE=${IMAGE:-$BENCH_DIR/images/files1m/godwarfs.dwarfs}
ROUNDS=${ROUNDS:-7}
REF_DWARFS=${REF_DWARFS:-}
need_root "mount.sh"
for t in mountpoint umount awk sort; do need "$t"; done
[[ -w /proc/sys/vm/drop_caches ]] || die "cannot write /proc/sys/vm/drop_caches"
[[ -f $IMAGE ]] || die "no image $IMAGE (make bench-scale builds it, or set IMAGE)"
ensure_bin dwarfs

drivers=("godwarfs=$BIN/dwarfs")
for d in ${DRIVERS:-}; do drivers+=("$d"); done
if [[ -n $REF_DWARFS && -x $REF_DWARFS/dwarfs ]]; then
	drivers+=("reference=$REF_DWARFS/dwarfs")
else
	echo "skipped: reference driver: REF_DWARFS is not set or has no dwarfs (point it at the reference tools)"
fi

M=$(mktemp -d)
PID=""
cleanup() {
	if mountpoint -q "$M" 2>/dev/null; then umount "$M" 2>/dev/null || umount -l "$M" || true; fi
	[[ -n $PID ]] && kill "$PID" 2>/dev/null || true
	rmdir "$M" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
# cpu PID: user+system CPU milliseconds of PID so far.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%d", ($14 + $15) * 1000 / hz}' "/proc/$1/stat"; }

RES=$(mktemp)
echo "image: $IMAGE ($ROUNDS rounds)"
for ((r = 1; r <= ROUNDS; r++)); do
	for spec in "${drivers[@]}"; do
		name=${spec%%=*} bin=${spec#*=}
		sync
		echo 3 >/proc/sys/vm/drop_caches
		t=$(now_ns)
		"$bin" "$IMAGE" "$M" -f -o cachesize=512m >/dev/null 2>&1 &
		PID=$!
		for ((i = 0; i < 6000; i++)); do mountpoint -q "$M" && break; sleep 0.01; done
		t2=$(now_ns)
		mountpoint -q "$M" || die "$name did not mount $IMAGE"
		r0=$(rss "$PID")
		c=$(cpu "$PID")
		sleep 0.5
		r1=$(rss "$PID")
		ms=$(((t2 - t) / 1000000))
		printf '%s round %d: mount %d ms (CPU %d ms), VmRSS %d KiB right after, %d KiB 0.5 s later, load %s\n' \
			"$name" "$r" "$ms" "$c" "$r0" "$r1" "$(cut -d' ' -f1-3 /proc/loadavg)"
		echo "$name $ms $r0 $r1 $c" >>"$RES"
		umount "$M"
		wait "$PID" || true
		PID=""
	done
done

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo
printf '%-12s %10s %10s %10s %12s %12s %12s\n' driver "mount ms" "ratio" "CPU ms" "RSS KiB" "ratio" "RSS 0.5 s"
refms=$(awk '$1 == "reference" {print $2}' "$RES" | median)
refrss=$(awk '$1 == "reference" {print $3}' "$RES" | median)
for spec in "${drivers[@]}"; do
	name=${spec%%=*}
	ms=$(awk -v n="$name" '$1 == n {print $2}' "$RES" | median)
	r0=$(awk -v n="$name" '$1 == n {print $3}' "$RES" | median)
	r1=$(awk -v n="$name" '$1 == n {print $4}' "$RES" | median)
	c=$(awk -v n="$name" '$1 == n {print $5}' "$RES" | median)
	printf '%-12s %10s %10s %10s %12s %12s %12s\n' "$name" "$ms" "$(ratio "$ms" "$refms")" "$c" "$r0" "$(ratio "$r0" "$refrss")" "$r1"
done
rm -f "$RES"
