#!/usr/bin/env bash
# make bench-read: read performance and memory of the godwarfs FUSE driver
# against the reference dwarfs driver (on the same image), squashfuse and the
# kernel's squashfs, on the same corpus.
#
#   BENCH_DIR    cache and output directory (default /var/tmp/godwarfs-bench)
#   BIN          directory with godwarfs binaries (default <repo>/bin; built if missing)
#   QUICK=1      small corpus and shorter fio runs
#   DRIVERS      subset of: dwarfs refdwarfs squashfuse kernel (default all four)
#   REF_DWARFS   directory with the reference tools (dwarfs, or bin/dwarfs); the
#                refdwarfs driver mounts the godwarfs image with them, and is
#                skipped with a printed reason when this is unset or incomplete
#   CORPORA      corpora to test (default xtools, or xtools-quick with QUICK=1)
#   CACHESIZE    godwarfs block cache size (default 512m)
#   DWARFS_OPTS  extra options for the godwarfs driver (default "-f": stay in foreground)
#   FIO_RUNTIME  seconds per fio run (default 5, QUICK 2)
#   FIO_RUNS     fio runs per metric, the best is reported (default 3, QUICK 1)
# Needs root (drop_caches, loop mounts).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DRIVERS=${DRIVERS:-"dwarfs refdwarfs squashfuse kernel"}
REF_DWARFS=${REF_DWARFS:-}
REF_BIN=""
if [[ " $DRIVERS " == *" refdwarfs "* ]]; then
	for c in "$REF_DWARFS/dwarfs" "$REF_DWARFS/bin/dwarfs" "$REF_DWARFS/sbin/dwarfs"; do
		if [[ -n $REF_DWARFS && -x $c ]]; then REF_BIN=$c; break; fi
	done
	if [[ -z $REF_BIN ]]; then
		if [[ -z $REF_DWARFS ]]; then
			echo "skipped: refdwarfs: REF_DWARFS is not set (point it at the reference tools)"
		else
			echo "skipped: refdwarfs: no dwarfs executable in $REF_DWARFS (or its bin/, sbin/)"
		fi
		DRIVERS=$(tr ' ' '\n' <<<"$DRIVERS" | grep -vx refdwarfs | tr '\n' ' ')
	fi
fi
CACHESIZE=${CACHESIZE:-512m}
DWARFS_OPTS=${DWARFS_OPTS:--f}
if [[ $QUICK == 1 ]]; then
	CORPORA=${CORPORA:-xtools-quick}
	FIO_RUNTIME=${FIO_RUNTIME:-2}
	FIO_RUNS=${FIO_RUNS:-1}
	WARM_RUNS=${WARM_RUNS:-2}
else
	CORPORA=${CORPORA:-xtools}
	FIO_RUNTIME=${FIO_RUNTIME:-5}
	FIO_RUNS=${FIO_RUNS:-3}
	WARM_RUNS=${WARM_RUNS:-3}
fi
export CORPORA

need_root "read.sh"
for t in mount umount mountpoint losetup fio tar ls find go awk getfattr; do need "$t"; done
[[ -w /proc/sys/vm/drop_caches ]] || die "cannot write /proc/sys/vm/drop_caches"
grep -qw squashfs /proc/filesystems || modprobe squashfs 2>/dev/null || true
for d in $DRIVERS; do
	case $d in
	dwarfs) ensure_bin dwarfs; [[ -e /dev/fuse ]] || die "/dev/fuse missing" ;;
	refdwarfs) ensure_bin dwarfs; [[ -e /dev/fuse ]] || die "/dev/fuse missing" ;;
	squashfuse) need squashfuse "install squashfuse"; [[ -e /dev/fuse ]] || die "/dev/fuse missing" ;;
	kernel) grep -qw squashfs /proc/filesystems || die "kernel has no squashfs support" ;;
	*) die "unknown driver $d" ;;
	esac
done

OUT=$BENCH_DIR/results
MNTBASE=$BENCH_DIR/mnt
mkdir -p "$OUT" "$MNTBASE"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT=$OUT/read-$STAMP.md
LOGF=$OUT/read-$STAMP.log
STATALL=$BENCH_DIR/statall
log "building bench/statall"
(cd "$REPO_ROOT" && go build -o "$STATALL" ./bench/statall) || die "cannot build bench/statall"

DRV_PID=""
cleanup() {
	local m
	for m in "$MNTBASE"/*/; do
		m=${m%/}
		if mountpoint -q "$m" 2>/dev/null; then
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
		fi
	done
	if [[ -n $DRV_PID ]] && kill -0 "$DRV_PID" 2>/dev/null; then
		kill "$DRV_PID" 2>/dev/null || true
	fi
	DRV_PID=""
}
trap cleanup EXIT
trap 'exit 130' INT TERM

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# pid_of_mount MNT: the process whose command line names MNT (a daemonizing driver).
pid_of_mount() {
	local p
	for p in /proc/[0-9]*; do
		if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- " $1"; then
			echo "${p#/proc/}"; return 0
		fi
	done
	return 1
}

# unmount_drv MNT: unmount and wait for the FUSE process to exit.
unmount_drv() {
	local m=$1 i
	if mountpoint -q "$m"; then umount "$m" || umount -l "$m"; fi
	if [[ -n $DRV_PID ]]; then
		for ((i = 0; i < 100; i++)); do kill -0 "$DRV_PID" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$DRV_PID" 2>/dev/null && { log "driver $DRV_PID still alive after unmount, killing"; kill "$DRV_PID" || true; }
		wait "$DRV_PID" 2>/dev/null || true
	fi
	DRV_PID=""
}

# mount_drv DRIVER IMAGE MNT: (re)mount cold: unmount, drop caches, mount.
# Sets DRV_PID (empty for the kernel driver) and MOUNT_S.
mount_drv() {
	local drv=$1 img=$2 m=$3 t0 i
	unmount_drv "$m"
	mkdir -p "$m"
	drop_caches
	t0=$(now_ns)
	case $drv in
	dwarfs)
		# shellcheck disable=SC2086
		"$BIN/dwarfs" "$img" "$m" -o "cachesize=$CACHESIZE" $DWARFS_OPTS >>"$LOGF" 2>&1 &
		DRV_PID=$! ;;
	refdwarfs)
		"$REF_BIN" "$img" "$m" -o "cachesize=$CACHESIZE" -f >>"$LOGF" 2>&1 &
		DRV_PID=$! ;;
	squashfuse)
		squashfuse -f "$img" "$m" >>"$LOGF" 2>&1 &
		DRV_PID=$! ;;
	kernel)
		mount -t squashfs -o loop,ro "$img" "$m" ;;
	esac
	for ((i = 0; i < 300; i++)); do
		mountpoint -q "$m" && break
		if [[ -n $DRV_PID ]] && ! kill -0 "$DRV_PID" 2>/dev/null; then
			# The driver may have forked into the background.
			wait "$DRV_PID" 2>/dev/null || { DRV_PID=""; tail -5 "$LOGF" >&2; die "$drv exited before mounting $img"; }
			DRV_PID=""
		fi
		sleep 0.05
	done
	mountpoint -q "$m" || die "$drv did not mount $img on $m within 15 s (log: $LOGF)"
	MOUNT_S=$(secs "$t0" "$(now_ns)")
	if [[ $drv != kernel ]] && { [[ -z $DRV_PID ]] || ! kill -0 "$DRV_PID" 2>/dev/null; }; then
		DRV_PID=$(pid_of_mount "$m") || die "cannot find the $drv process for $m"
	fi
}

hwm() { # peak RSS of the driver in bytes, n/a for the kernel
	if [[ -n $DRV_PID && -r /proc/$DRV_PID/status ]]; then
		awk '/^VmHWM:/ { print $2 * 1024 }' "/proc/$DRV_PID/status"
	else
		echo n/a
	fi
}

# timeit CMD...: run CMD (output discarded), print seconds.
timeit() {
	local t0; t0=$(now_ns)
	"$@" >/dev/null
	secs "$t0" "$(now_ns)"
}
lsR() { ls -lR "$1"; }
tar_all() { (cd "$1" && tar -cf - .) | wc -c; }
# requests DRIVER MNT: the godwarfs driver's count of FUSE requests so far.
requests() {
	[[ $1 == dwarfs ]] || { echo n/a; return; }
	getfattr --only-values -n user.dwarfs.driver.perfmon "$2" 2>/dev/null |
		sed -n 's/^fuse.requests: //p' | tr ' ' ',' || echo n/a
}
min_of() { printf '%s\n' "$@" | sort -g | head -1; }

# fio_bw FILE RW JOBS: aggregate read bandwidth in MiB/s (4k psync, buffered,
# page cache invalidated at every pass over the file), best of FIO_RUNS runs:
# background load only ever lowers it, and on 2 CPUs by up to 2x.
fio_bw() {
	local line i bw best=""
	for ((i = 0; i < FIO_RUNS; i++)); do
		line=$(fio --name=bench --filename="$1" --readonly --rw="$2" --bs=4k --ioengine=psync \
			--numjobs="$3" --time_based --runtime="$FIO_RUNTIME" --invalidate=1 --group_reporting \
			--output-format=terse --terse-version=3 2>>"$LOGF") || continue
		bw=$(awk -F';' '{ printf "%.1f", $7 / 1024 }' <<<"$line")
		echo "fio $2 x$3 run $((i + 1)): $bw MiB/s (load $(cut -d' ' -f1 /proc/loadavg))" >>"$LOGF"
		if [[ -z $best ]] || awk -v a="$bw" -v b="$best" 'BEGIN { exit !(a > b) }'; then best=$bw; fi
	done
	echo "${best:-n/a}"
}

declare -A V=()
METRICS=()
put() { # put DRIVER METRIC VALUE
	V["$1|$2"]=$3
	local m
	for m in "${METRICS[@]:-}"; do [[ $m == "$2" ]] && return; done
	METRICS+=("$2")
}

bench_driver() { # DRIVER IMAGE CORPUS_DIR FILELIST BIGFILE
	local drv=$1 img=$2 src=$3 list=$4 big=$5 m=$MNTBASE/$1 t runs=() i n out
	log "[$drv] cold mount + ls -lR"
	mount_drv "$drv" "$img" "$m"
	put "$drv" "mount s" "$MOUNT_S"
	put "$drv" "ls -lR cold s" "$(timeit lsR "$m")"
	put "$drv" "FUSE requests after ls -lR cold" "$(requests "$drv" "$m")"
	for ((i = 0; i < WARM_RUNS; i++)); do runs+=("$(timeit lsR "$m")"); done
	put "$drv" "ls -lR warm s" "$(min_of "${runs[@]}")"
	put "$drv" "FUSE requests after $WARM_RUNS more ls -lR" "$(requests "$drv" "$m")"
	t=$(now_ns); n=$(find "$m" -type f | wc -l)
	put "$drv" "find -type f s" "$(secs "$t" "$(now_ns)")"
	[[ $n -eq $(find "$src" -type f | wc -l) ]] || log "[$drv] WARNING: find saw $n files, corpus has $(find "$src" -type f | wc -l)"
	put "$drv" "find file count" "$n"
	put "$drv" "RSS after ls/find MiB" "$(mib "$(hwm)")"

	for n in 1 2 4 8; do
		log "[$drv] statall $n threads (cold, then warm)"
		mount_drv "$drv" "$img" "$m"
		out=$("$STATALL" -list "$list" -prefix "$m" -threads "$n") || log "[$drv] statall errors: $out"
		put "$drv" "stat all, $n thr cold s" "$(sed -n 's/.*elapsed=//p' <<<"$out")"
		out=$("$STATALL" -list "$list" -prefix "$m" -threads "$n") || log "[$drv] statall errors: $out"
		put "$drv" "stat all, $n thr warm s" "$(sed -n 's/.*elapsed=//p' <<<"$out")"
	done
	put "$drv" "RSS after stat MiB" "$(mib "$(hwm)")"

	log "[$drv] full read: tar -cf - . | wc -c (cold)"
	mount_drv "$drv" "$img" "$m"
	t=$(now_ns); n=$(tar_all "$m"); t=$(secs "$t" "$(now_ns)")
	put "$drv" "tar full read cold s" "$t"
	put "$drv" "tar bytes" "$n"
	put "$drv" "tar MiB/s" "$(awk -v b="$n" -v s="$t" 'BEGIN { printf "%.1f", b / 1048576 / s }')"
	t=$(now_ns); tar_all "$m" >/dev/null; put "$drv" "tar full read warm s" "$(secs "$t" "$(now_ns)")"
	put "$drv" "RSS after full read MiB" "$(mib "$(hwm)")"

	log "[$drv] fio on $big"
	mount_drv "$drv" "$img" "$m"
	put "$drv" "fio seq 4k 1 job MiB/s" "$(fio_bw "$m/$big" read 1)"
	put "$drv" "fio seq 4k 4 jobs MiB/s" "$(fio_bw "$m/$big" read 4)"
	put "$drv" "fio rand 4k 1 job MiB/s" "$(fio_bw "$m/$big" randread 1)"
	put "$drv" "fio rand 4k 4 jobs MiB/s" "$(fio_bw "$m/$big" randread 4)"
	put "$drv" "RSS after fio MiB" "$(mib "$(hwm)")"
	unmount_drv "$m"
}

{
	echo "# godwarfs bench-read ($STAMP)"
	echo
	machine_note
	echo "- drivers: $DRIVERS; godwarfs: \`dwarfs IMG MNT -o cachesize=$CACHESIZE $DWARFS_OPTS\`; reference: ${REF_BIN:-skipped (REF_DWARFS unset)} \`IMG MNT -o cachesize=$CACHESIZE -f\` on the godwarfs image; squashfuse $(dpkg-query -W -f '${Version}' squashfuse 2>/dev/null || echo '?'): \`squashfuse -f IMG MNT\`; kernel: \`mount -t squashfs -o loop,ro\`"
	echo "- \"cold\" = unmount, drop_caches, fresh mount (new driver process); \"warm\" = repeated right after (best of $WARM_RUNS for ls -lR)"
	echo "- fio: 4k psync buffered, --invalidate=1 (page cache dropped at each pass over the file), ${FIO_RUNTIME}s per run, best of $FIO_RUNS runs per metric, fresh mount before the fio runs"
	echo "- RSS = VmHWM of the driver process (new process after every cold remount); kernel: n/a"
	echo "- ratio columns: for times peer/godwarfs, for MiB/s godwarfs/peer (so >1 = godwarfs faster); for RSS godwarfs/peer (<1 = godwarfs smaller)"
	echo "- FUSE requests: the godwarfs driver's perfmon fuse.requests counters (cumulative on that mount)"
	echo
} >"$REPORT"

for c in $CORPORA; do
	"$BENCH_SRC/corpus.sh" >/dev/null
	check_corpus "$c"
	src=$(corpus_dir "$c")
	imgdir=$BENCH_DIR/images/$c
	need_tools=""
	[[ -s $imgdir/sqfs-zstd22.sqfs ]] || need_tools+=" sqfs-zstd22"
	[[ " $DRIVERS " == *"dwarfs "* && ! -s $imgdir/dwarfs-l7.dwarfs ]] && need_tools+=" dwarfs-l7"
	if [[ -n $need_tools ]]; then
		log "images missing for $c:$need_tools; building them"
		TOOLS=${need_tools# } CORPORA=$c "$BENCH_SRC/build.sh" >/dev/null
	fi
	list=$OUT/.files-$c
	(cd "$src" && find . -mindepth 1 | sed 's|^\./||') >"$list"
	big=$(cd "$src" && find . -type f -printf '%s %P\n' | sort -n | tail -1 | cut -d' ' -f2-)
	log "corpus $c: $(wc -l <"$list") entries, largest file $big ($(stat -c %s "$src/$big") bytes)"
	V=()
	METRICS=()
	for d in $DRIVERS; do
		case $d in dwarfs | refdwarfs) img=$imgdir/dwarfs-l7.dwarfs ;; *) img=$imgdir/sqfs-zstd22.sqfs ;; esac
		bench_driver "$d" "$img" "$src" "$list" "$big"
	done
	{
		echo "## corpus $c ($(grep -c . "$list") entries; fio file $big, $(stat -c %s "$src/$big") bytes)"
		echo
		echo "images: godwarfs $(mib "$(stat -c %s "$imgdir/dwarfs-l7.dwarfs" 2>/dev/null || echo n/a)") MiB (dwarfs-l7), squashfs $(mib "$(stat -c %s "$imgdir/sqfs-zstd22.sqfs")") MiB (zstd-22)"
		echo
		hdr="| metric |"; sep="|---|"
		for d in $DRIVERS; do
			case $d in dwarfs) hdr+=" godwarfs |" ;; refdwarfs) hdr+=" reference dwarfs |" ;; squashfuse) hdr+=" squashfuse |" ;; kernel) hdr+=" kernel squashfs |" ;; esac
			sep+="---:|"
		done
		hdr+=" godwarfs vs reference | godwarfs vs squashfuse |"; sep+="---:|---:|"
		echo "$hdr"; echo "$sep"
		for mt in "${METRICS[@]}"; do
			row="| $mt |"
			for d in $DRIVERS; do row+=" ${V["$d|$mt"]:-n/a} |"; done
			g=${V["dwarfs|$mt"]:-n/a}
			for peer in refdwarfs squashfuse; do
				s=${V["$peer|$mt"]:-n/a}
				case $mt in
				*" s") r=$(ratio "$s" "$g") ;;
				*"MiB/s") r=$(ratio "$g" "$s") ;;
				RSS*) r=$(ratio "$g" "$s") ;;
				*) r="" ;;
				esac
				row+=" $r |"
			done
			echo "$row"
		done
		echo
		if [[ " $DRIVERS " == *" dwarfs "* && -x $BIN/dwarfsck ]]; then
			echo "dwarfsck output (for the metadata size in the RSS budget):"
			echo '```'
			"$BIN/dwarfsck" "$imgdir/dwarfs-l7.dwarfs" 2>&1 | head -40 || true
			echo '```'
			echo
		fi
	} >>"$REPORT"
done
echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$REPORT"
cp "$REPORT" "$OUT/read-latest.md"
cat "$REPORT"
log "report: $REPORT (driver logs: $LOGF)"
