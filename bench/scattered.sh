#!/usr/bin/env bash
# Scattered reads from big-block images: a few dozen files, read in name
# order through a FUSE mount, cold (page cache dropped before every run),
# drivers alternated. Reports the read's wall time and the driver's peak
# RSS (VmHWM), medians over ROUNDS, with ratios to squashfuse.
#
#   MOUNTS="new=dwarfs:BIN/dwarfs:IMG.dwarfs old=dwarfs:OLD/dwarfs:IMG.dwarfs \
#           ref=dwarfs:$HOME/.cache/reference-dwarfs/dwarfs:IMG.dwarfs sq=squashfuse:squashfuse:IMG.sqfs" \
#   FILES=list.txt ROUNDS=3 bench/scattered.sh
#
# FILES lists the paths to read, relative to the mount point, in the order
# to read them; without it, every regular file whose name starts with
# PATTERN (default libp) in TREE (the tree the images were built from),
# sorted by path. DWARFS_OPTS are extra options for the dwarfs drivers
# (e.g. "-o cachesize=64m"); each driver runs in the foreground so its pid
# is known. The first mount named sq (if any) is the ratios' base.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
PATTERN=${PATTERN:-libp}
DWARFS_OPTS=${DWARFS_OPTS:-}
MNT=${MNT:-$(mktemp -d /tmp/scattered.XXXXXX)}
: "${MOUNTS:?MOUNTS=\"name=kind:driver:image ...\" (kind dwarfs or squashfuse)}"

if [[ -z ${FILES:-} ]]; then
	: "${TREE:?TREE=DIR (the source tree) or FILES=LIST}"
	FILES=$(mktemp /tmp/scattered-files.XXXXXX)
	(cd "$TREE" && find . -type f -name "$PATTERN*" | LC_ALL=C sort) >"$FILES"
fi
nfiles=$(wc -l <"$FILES")

drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# run NAME KIND DRIVER IMAGE: mounts, reads the files, prints "secs hwm_kib".
run() {
	local kind=$2 driver=$3 image=$4 pid
	drop
	case $kind in
	dwarfs) "$driver" "$image" "$MNT" -f $DWARFS_OPTS >/tmp/scattered-driver.log 2>&1 & ;;
	squashfuse) "$driver" -f "$image" "$MNT" >/tmp/scattered-driver.log 2>&1 & ;;
	*) echo "unknown kind $kind" >&2; exit 1 ;;
	esac
	pid=$!
	for _ in $(seq 300); do mountpoint -q "$MNT" && break; sleep 0.1; done
	mountpoint -q "$MNT" || { cat /tmp/scattered-driver.log >&2; exit 1; }
	local t0 t1
	t0=$(date +%s.%N)
	(cd "$MNT" && tr '\n' '\0' <"$FILES" | xargs -0 cat >/dev/null)
	t1=$(date +%s.%N)
	local hwm
	hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
	fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT"
	wait $pid || true
	echo "$(echo "$t1 - $t0" | bc) $hwm"
}

read -r -a mounts <<<"$MOUNTS"
declare -A times hwms
for r in $(seq "$ROUNDS"); do
	# Alternate: every round starts one mount later.
	n=${#mounts[@]}
	for k in $(seq 0 $((n - 1))); do
		m=${mounts[$(((k + r) % n))]}
		name=${m%%=*}
		IFS=: read -r kind driver image <<<"${m#*=}"
		read -r secs hwm < <(run "$name" "$kind" "$driver" "$image")
		times[$name]+="$secs "
		hwms[$name]+="$hwm "
		echo "round $r $name: ${secs}s, peak RSS ${hwm} KiB, load $(cut -d' ' -f1 /proc/loadavg)" >&2
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# ratios NAME BASE LISTVAR: the median over rounds of NAME's value over
# BASE's in the same round.
ratio() {
	paste -d' ' <(echo "$1" | tr ' ' '\n' | grep -v '^$') <(echo "$2" | tr ' ' '\n' | grep -v '^$') |
		awk '{print $1 / $2}' | median
}

base=""
for m in "${mounts[@]}"; do [[ ${m%%=*} == sq ]] && base=sq; done
echo "scattered read of $nfiles files, cold, $ROUNDS rounds (medians; ratios are medians of per-round ratios)"
echo
echo "| mount | time s | peak RSS MiB | time / sq | RSS / sq |"
echo "|---|---|---|---|---|"
for m in "${mounts[@]}"; do
	name=${m%%=*}
	t=$(echo "${times[$name]}" | median)
	h=$(echo "${hwms[$name]}" | median)
	rt=-; rh=-
	if [[ -n $base ]]; then
		rt=$(printf '%.2f' "$(ratio "${times[$name]}" "${times[$base]}")")
		rh=$(printf '%.1f' "$(ratio "${hwms[$name]}" "${hwms[$base]}")")
	fi
	printf '| %s | %.2f | %.1f | %s | %s |\n' "$name" "$t" "$(echo "scale=1; $h / 1024" | bc)" "$rt" "$rh"
done
rmdir "$MNT" 2>/dev/null || true
