#!/usr/bin/env bash
# readmem.sh: peak RSS (VmHWM) and throughput of the FUSE driver over a full
# read of an image, the godwarfs driver beside the reference driver in the
# same run. For each image and each of ROUNDS rounds (the order of the two
# drivers alternates between rounds): drop the page cache, start the driver
# in the foreground with -o cachesize=$CACHESIZE, read every file (one file:
# `cat FILE`; a tree: `tar -cf - . | cat`), both to /dev/null, and record
# the wall time, the driver's CPU time and its VmHWM. Prints medians and ratios
# godwarfs/reference.
#
#   REF_DWARFS=DIR bench/readmem.sh IMAGE...
#
# Needs root (drop_caches) and FUSE. Without REF_DWARFS only godwarfs runs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root "readmem.sh"
ROUNDS=${ROUNDS:-3}
CACHESIZE=${CACHESIZE:-512m}
[[ $# -gt 0 ]] || die "usage: readmem.sh IMAGE..."
ensure_bin dwarfs
DRIVERS=(godwarfs)
if [[ -n ${REF_DWARFS:-} && -x $REF_DWARFS/dwarfs ]]; then
	DRIVERS+=(reference)
else
	echo "reference: skipped: REF_DWARFS does not name a directory with the reference dwarfs"
fi
MNT=$(mktemp -d)
trap 'umount "$MNT" 2>/dev/null || true; rmdir "$MNT"' EXIT

driver_bin() { if [[ $1 == godwarfs ]]; then echo "$BIN/dwarfs"; else echo "$REF_DWARFS/dwarfs"; fi; }

# run DRIVER IMAGE -> "seconds hwm_kib bytes cpu_seconds" (CPU: the
# driver's user+system time from mount to unmount)
run() {
	local bin pid i t0 t1 hwm bytes files cpu
	bin=$(driver_bin "$1")
	sync
	echo 3 >/proc/sys/vm/drop_caches
	"$bin" "$2" "$MNT" -f -o "cachesize=$CACHESIZE" >/dev/null 2>&1 &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		mountpoint -q "$MNT" && break
		kill -0 "$pid" 2>/dev/null || die "$1 exited before mounting $2"
		sleep 0.05
	done
	mountpoint -q "$MNT" || die "$1 did not mount $2"
	files=$(find "$MNT" -type f | wc -l)
	bytes=$(find "$MNT" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
	t0=$(now_ns)
	if [[ $files == 1 ]]; then
		cat "$(find "$MNT" -type f)" >/dev/null
	else
		(cd "$MNT" && tar -cf - . | cat >/dev/null)
	fi
	t1=$(now_ns)
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
	cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$pid/stat")
	umount "$MNT"
	wait "$pid" || true
	echo "$(secs "$t0" "$t1") $hwm $bytes $cpu"
}

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for img in "$@"; do
	declare -A T=() H=() C=()
	bytes=0
	for ((r = 0; r < ROUNDS; r++)); do
		order=("${DRIVERS[@]}")
		if ((r % 2 == 1)) && ((${#DRIVERS[@]} == 2)); then order=("${DRIVERS[1]}" "${DRIVERS[0]}"); fi
		for d in "${order[@]}"; do
			read -r s h bytes cpu < <(run "$d" "$img")
			T[$d]+="$s "
			H[$d]+="$h "
			C[$d]+="$cpu "
			log "$(basename "$img") round $((r + 1)) $d: ${s}s, CPU ${cpu}s, VmHWM $(mib $((h * 1024))) MiB, load $(cut -d' ' -f1 /proc/loadavg)"
		done
	done
	echo
	echo "### $img (cachesize=$CACHESIZE, $(mib "$bytes") MiB of file data, $ROUNDS rounds, medians)"
	echo
	echo "| driver | read s | MiB/s | driver CPU s | VmHWM MiB | runs (s) | runs CPU (s) | runs VmHWM (KiB) |"
	echo "|---|---|---|---|---|---|---|---|"
	for d in "${DRIVERS[@]}"; do
		# shellcheck disable=SC2086
		ms=$(median ${T[$d]}); mh=$(median ${H[$d]}); mc=$(median ${C[$d]})
		eval "M_S_$d=$ms M_H_$d=$mh M_C_$d=$mc"
		echo "| $d | $ms | $(awk -v b="$bytes" -v s="$ms" 'BEGIN { printf "%.1f", b / 1048576 / s }') | $mc | $(mib $((mh * 1024))) | ${T[$d]} | ${C[$d]} | ${H[$d]} |"
	done
	if ((${#DRIVERS[@]} == 2)); then
		echo
		echo "- godwarfs/reference: read time $(ratio "$M_S_godwarfs" "$M_S_reference"), throughput $(ratio "$M_S_reference" "$M_S_godwarfs"), driver CPU $(ratio "$M_C_godwarfs" "$M_C_reference"), VmHWM $(ratio "$M_H_godwarfs" "$M_H_reference") (difference $(mib $(((M_H_godwarfs - M_H_reference) * 1024))) MiB)"
	fi
	unset T H C
done
echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
