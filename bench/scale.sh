#!/usr/bin/env bash
# make bench-scale: memory and time of the read path on a tree of many
# small files (corpus files1m: 1,000,000 files from bench/gentree), the
# godwarfs tools beside the reference tools on the same image:
#   - each FUSE driver: mount time, RSS right after the mount, `find` cold,
#     RSS after it, `ls -lR` cold and warm (same mount again), RSS after
#     it, lstat of 100,000 random files with 1 and 8 threads cold (fresh
#     mount each) and the FUSE requests each step sent (the driver's
#     perfmon counters; godwarfs only) (VmRSS and VmHWM, and the driver's
#     CPU seconds, which the load of a shared machine does not inflate the
#     way it inflates wall times)
#   - the library: godwarfs.Open + fs.WalkDir with Lstat of every entry,
#     peak heap (bench/libwalk) against the uncompressed metadata size
#   - dwarfsck (default output) and dwarfsextract -o DIR: wall and peak RSS
#
#   BENCH_DIR    cache and output directory (default /var/tmp/godwarfs-bench)
#   BIN          directory with godwarfs binaries (default <repo>/bin; built if missing)
#   REF_DWARFS   directory with the reference tools (dwarfs, dwarfsck,
#                dwarfsextract); their columns are skipped with a printed
#                reason when unset
#   CORPUS       corpus to use (default files1m; QUICK=1: files100k)
#   MKDWARFS_OPTS  options for building the image (default "-l 3")
#   IMAGE        an existing image of CORPUS to use instead (e.g. one made by
#                the reference mkdwarfs); the library walk then reads it too
#   SKIP         subset of: lsR stat extract (the slow parts) to leave out
# Needs root (drop_caches).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REF_DWARFS=${REF_DWARFS:-}
if [[ $QUICK == 1 ]]; then CORPUS=${CORPUS:-files100k}; else CORPUS=${CORPUS:-files1m}; fi
MKDWARFS_OPTS=${MKDWARFS_OPTS:--l 3}
SKIP=${SKIP:-}
need_root "scale.sh"
for t in mount umount mountpoint find ls go awk shuf getfattr; do need "$t"; done
[[ -w /proc/sys/vm/drop_caches ]] || die "cannot write /proc/sys/vm/drop_caches"
ensure_bin mkdwarfs dwarfs dwarfsck dwarfsextract
REF=()
if [[ -z $REF_DWARFS ]]; then
	echo "skipped: reference tools: REF_DWARFS is not set (point it at the reference tools)"
else
	for t in dwarfs dwarfsck dwarfsextract; do
		b=""
		for c in "$REF_DWARFS/$t" "$REF_DWARFS/bin/$t" "$REF_DWARFS/sbin/$t"; do [[ -x $c ]] && { b=$c; break; }; done
		[[ -n $b ]] || die "no $t in $REF_DWARFS (or its bin/, sbin/)"
		REF+=("$b")
	done
fi

CORPORA=$CORPUS "$BENCH_SRC/corpus.sh" >/dev/null
check_corpus "$CORPUS"
src=$(corpus_dir "$CORPUS")
img=${IMAGE:-$BENCH_DIR/images/$CORPUS/godwarfs.dwarfs}
mkdir -p "$BENCH_DIR/images/$CORPUS"
if [[ ! -s $img ]]; then
	[[ -z ${IMAGE:-} ]] || die "IMAGE $IMAGE does not exist"
	mkdir -p "$(dirname "$img")"
	log "building $img with mkdwarfs $MKDWARFS_OPTS"
	# shellcheck disable=SC2086
	"$BIN/mkdwarfs" -i "$src" -o "$img.tmp" $MKDWARFS_OPTS --no-progress >/dev/null && mv "$img.tmp" "$img"
fi
LIBWALK=$BENCH_DIR/libwalk
(cd "$REPO_ROOT" && go build -o "$LIBWALK" ./bench/libwalk) || die "cannot build bench/libwalk"
STATALL=$BENCH_DIR/statall
(cd "$REPO_ROOT" && go build -o "$STATALL" ./bench/statall) || die "cannot build bench/statall"
STATLIST=$BENCH_DIR/images/$CORPUS/stat-100k.list
if [[ ! -s $STATLIST ]]; then
	# The same random files for every driver and run.
	(cd "$src" && find . -type f | sort | shuf -n 100000 --random-source=<(yes)) >"$STATLIST.tmp" && mv "$STATLIST.tmp" "$STATLIST"
fi

OUT=$BENCH_DIR/results
M=$BENCH_DIR/mnt/scale
mkdir -p "$OUT" "$M"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT=$OUT/scale-$STAMP.md
LOGF=$OUT/scale-$STAMP.log
PID=""
cleanup() {
	if mountpoint -q "$M" 2>/dev/null; then umount "$M" 2>/dev/null || umount -l "$M" || true; fi
	[[ -n $PID ]] && kill "$PID" 2>/dev/null || true
	rm -rf "$BENCH_DIR/extract.tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# mem: "VmRSS VmHWM" of $PID in MiB, and its CPU seconds.
mem() { awk '/^VmRSS:/ {r=$2} /^VmHWM:/ {h=$2} END {printf "%.1f %.1f", r/1024, h/1024}' "/proc/$PID/status"; }
cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14+$15)/hz}' "/proc/$PID/stat"; }

declare -A V
put() { V["$1|$2"]=$3; }
declare -A REQ
# requests NAME STEP: the FUSE requests the godwarfs driver has counted so
# far (its perfmon xattr), for the report.
requests() {
	[[ $1 == godwarfs ]] || return 0
	REQ["$2"]=$(getfattr --only-values -n user.dwarfs.driver.perfmon "$M" 2>/dev/null | sed -n 's/^fuse.requests: //p')
}
mount_drv() { # BINARY
	drop_caches
	"$1" "$img" "$M" -f -o cachesize=512m >>"$LOGF" 2>&1 &
	PID=$!
	for ((i = 0; i < 6000; i++)); do mountpoint -q "$M" && break; sleep 0.01; done
	mountpoint -q "$M" || die "$1 did not mount $img (log: $LOGF)"
}

driver() { # NAME BINARY
	local name=$1 bin=$2 t i r
	log "[$name] mount"
	drop_caches
	t=$(now_ns)
	"$bin" "$img" "$M" -f -o cachesize=512m >>"$LOGF" 2>&1 &
	PID=$!
	for ((i = 0; i < 6000; i++)); do mountpoint -q "$M" && break; sleep 0.01; done
	mountpoint -q "$M" || die "$name did not mount $img (log: $LOGF)"
	stat "$M" >/dev/null
	put "$name" "mount time s" "$(secs "$t" "$(now_ns)")"
	put "$name" "mount CPU s" "$(cpu)"
	read -r r h <<<"$(mem)"
	put "$name" "RSS after mount MiB" "$r"; put "$name" "HWM after mount MiB" "$h"
	log "[$name] find"
	t=$(now_ns); find "$M" >/dev/null; put "$name" "find cold s" "$(secs "$t" "$(now_ns)")"
	put "$name" "CPU after find s" "$(cpu)"
	read -r r h <<<"$(mem)"
	put "$name" "RSS after find MiB" "$r"; put "$name" "HWM after find MiB" "$h"
	requests "$name" "find cold"
	if [[ " $SKIP " != *" lsR "* ]]; then
		umount "$M"; wait "$PID" || true
		mount_drv "$bin"
		log "[$name] ls -lR"
		t=$(now_ns); ls -lR "$M" >/dev/null; put "$name" "ls -lR cold s" "$(secs "$t" "$(now_ns)")"
		put "$name" "CPU after ls -lR s" "$(cpu)"
		read -r r h <<<"$(mem)"
		put "$name" "RSS after ls -lR MiB" "$r"; put "$name" "HWM after ls -lR MiB" "$h"
		requests "$name" "ls -lR cold"
		t=$(now_ns); ls -lR "$M" >/dev/null; put "$name" "ls -lR warm s" "$(secs "$t" "$(now_ns)")"
		requests "$name" "ls -lR cold + warm"
	fi
	if [[ " $SKIP " != *" stat "* ]]; then
		for n in 1 8; do
			umount "$M"; wait "$PID" || true
			mount_drv "$bin"
			log "[$name] lstat of 100k files, $n threads"
			t=$(now_ns); "$STATALL" -list "$STATLIST" -prefix "$M" -threads "$n" >/dev/null
			put "$name" "stat 100k $n thr cold s" "$(secs "$t" "$(now_ns)")"
			put "$name" "CPU after stat $n thr s" "$(cpu)"
			read -r r h <<<"$(mem)"
			put "$name" "RSS after stat $n thr MiB" "$r"
			requests "$name" "stat $n threads"
		done
	fi
	umount "$M"; wait "$PID" || true; PID=""
}

tool() { # NAME METRIC CMD...: wall, CPU seconds and peak RSS of CMD, cold
	local name=$1 metric=$2 t; shift 2
	drop_caches
	t=$(now_ns)
	/usr/bin/time -f '%M %U %S' -o "$OUT/.time" "$@" >/dev/null 2>>"$LOGF" || die "$* failed (log: $LOGF)"
	put "$name" "$metric s" "$(secs "$t" "$(now_ns)")"
	put "$name" "$metric CPU s" "$(awk '{printf "%.2f", $2+$3}' "$OUT/.time")"
	put "$name" "$metric RSS MiB" "$(awk '{printf "%.1f", $1/1024}' "$OUT/.time")"
}
need /usr/bin/time "install time"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

driver godwarfs "$BIN/dwarfs"
[[ ${#REF[@]} -gt 0 ]] && driver reference "${REF[0]}"
tool godwarfs dwarfsck "$BIN/dwarfsck" "$img"
[[ ${#REF[@]} -gt 0 ]] && tool reference dwarfsck "${REF[1]}" "$img"
if [[ " $SKIP " != *" extract "* ]]; then
	rm -rf "$BENCH_DIR/extract.tmp"; mkdir -p "$BENCH_DIR/extract.tmp"
	tool godwarfs dwarfsextract "$BIN/dwarfsextract" -i "$img" -o "$BENCH_DIR/extract.tmp"
	if [[ ${#REF[@]} -gt 0 ]]; then
		rm -rf "$BENCH_DIR/extract.tmp"; mkdir -p "$BENCH_DIR/extract.tmp"
		tool reference dwarfsextract "${REF[2]}" -i "$img" -o "$BENCH_DIR/extract.tmp"
	fi
	rm -rf "$BENCH_DIR/extract.tmp"
fi
drop_caches
log "library walk"
libout=$("$LIBWALK" "$img")
meta=$("$BIN/dwarfsck" "$img" | awk '/^uncompressed metadata size:/ {print $4, $5}')

METRICS=("mount time s" "mount CPU s" "RSS after mount MiB" "HWM after mount MiB" "find cold s" "CPU after find s"
	"RSS after find MiB" "HWM after find MiB" "ls -lR cold s" "CPU after ls -lR s" "RSS after ls -lR MiB" "HWM after ls -lR MiB"
	"ls -lR warm s" "stat 100k 1 thr cold s" "CPU after stat 1 thr s" "RSS after stat 1 thr MiB"
	"stat 100k 8 thr cold s" "CPU after stat 8 thr s" "RSS after stat 8 thr MiB"
	"dwarfsck s" "dwarfsck CPU s" "dwarfsck RSS MiB" "dwarfsextract s" "dwarfsextract CPU s" "dwarfsextract RSS MiB")
{
	echo "# godwarfs bench-scale ($STAMP)"
	echo
	machine_note | grep -v '^- load average'
	echo "- load average at start: $LOAD0"
	echo "- corpus $CORPUS: $(find "$src" -type f | wc -l) files; image ${IMAGE:-by godwarfs mkdwarfs $MKDWARFS_OPTS}, $(mib "$(stat -L -c %s "$img")") MiB, uncompressed metadata $meta"
	echo "- drivers: \`dwarfs IMG MNT -f -o cachesize=512m\` each; cold = drop_caches + fresh mount; RSS/HWM = VmRSS/VmHWM of the driver"
	echo "- ratio = godwarfs / reference (lower is better for every row)"
	echo
	echo "| metric | godwarfs | reference | ratio |"
	echo "|---|---:|---:|---:|"
	for mt in "${METRICS[@]}"; do
		g=${V["godwarfs|$mt"]:-n/a}; r=${V["reference|$mt"]:-n/a}
		[[ $g == n/a && $r == n/a ]] && continue
		echo "| $mt | $g | $r | $(ratio "$g" "$r") |"
	done
	if [[ ${#REQ[@]} -gt 0 ]]; then
		echo
		echo "FUSE requests reaching the godwarfs driver (perfmon; cumulative per mount):"
		echo
		for k in "find cold" "ls -lR cold" "ls -lR cold + warm" "stat 1 threads" "stat 8 threads"; do
			[[ -n ${REQ[$k]:-} ]] && echo "- $k: ${REQ[$k]}"
		done
	fi
	echo
	echo "library, \`bench/libwalk IMG\` (godwarfs.Open + fs.WalkDir + Lstat of every entry):"
	echo '```'
	echo "$libout"
	echo '```'
	echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$REPORT"
cp "$REPORT" "$OUT/scale-latest.md"
cat "$REPORT"
log "report: $REPORT (log: $LOGF)"
