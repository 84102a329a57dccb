#!/usr/bin/env bash
# Build memory per file on trees of many small files (issue "a hundred
# million files in bounded memory"), godwarfs beside the reference.
#
# MODE=tree (default): a tree of FILES small text files (bench/gentree
# -shape smalltext: 30% tiny near-duplicates, the rest 5-120 words) in
# FILES/100 directories, generated once under BENCH_DIR/corpus. Each round
# builds it with godwarfs mkdwarfs and with the reference's, in alternating
# order, page cache dropped before each build; then each image is opened
# (dwarfsck -q --no-check, cache dropped) and mounted by its own tool's
# driver (timed until the mount appears and a stat of its root returns,
# waiting without a polling loop; VmRSS right after).
#
# MODE=tar: a generated tar stream of FILES entries (-shape empty: empty
# or few-byte files, FILES/100 directories) piped into godwarfs mkdwarfs
# -i - with MEMLIMIT as --memory-limit when set; the image's listing must
# equal the stream's. The reference cannot read a tar stream, so with
# REF_MKDWARFS it rebuilds the image's metadata (--rebuild-metadata) to get
# a reference-made image of the same tree, and both images are opened and
# mounted as in tree mode.
#
# Reported per build: wall, CPU (user+sys), peak RSS (/usr/bin/time -v),
# bytes of peak RSS per file, image size; medians over ROUNDS, and
# godwarfs / reference ratios.
#
#   FILES        entries (default 1000000; QUICK=1: 200000)
#   LEVEL        compression level (default 3)
#   ROUNDS       rounds (default 3)
#   MEMLIMIT     --memory-limit for godwarfs mkdwarfs (default: none)
#   GO_OPTS      more options for godwarfs mkdwarfs
#   REF_MKDWARFS reference mkdwarfs (default ~/.cache/reference-dwarfs/mkdwarfs;
#                its dwarfsck and dwarfs beside it); skipped with a reason if missing
#   BIN          directory with the godwarfs binaries (default <repo>/bin; built if missing)
#   SKIP         subset of: build open mount (parts to leave out; without
#                build, the images of an earlier run are opened and mounted)
# Needs root (drop_caches, mount).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

MODE=${MODE:-tree}
if [[ $QUICK == 1 ]]; then FILES=${FILES:-200000}; else FILES=${FILES:-1000000}; fi
LEVEL=${LEVEL:-3}
ROUNDS=${ROUNDS:-3}
MEMLIMIT=${MEMLIMIT:-}
GO_OPTS=${GO_OPTS:-}
SKIP=${SKIP:-}
REF_MKDWARFS=${REF_MKDWARFS:-$HOME/.cache/reference-dwarfs/mkdwarfs}
need_root "manyfiles.sh"
for t in /usr/bin/time mountpoint findmnt umount awk sort; do need "$t"; done
ensure_bin mkdwarfs dwarfsck dwarfs
REFDIR=""
if [[ -x $REF_MKDWARFS ]]; then
	REFDIR=$(dirname "$REF_MKDWARFS")
else
	echo "skipped: reference columns: no reference mkdwarfs at $REF_MKDWARFS (set REF_MKDWARFS)"
fi

work=$BENCH_DIR/manyfiles
mkdir -p "$work" "$BENCH_DIR/corpus"
gen=$work/gentree
(cd "$REPO_ROOT" && go build -o "$gen" ./bench/gentree) || die "cannot build bench/gentree"
DIRS=$((FILES / 100))
[[ $DIRS -ge 1 ]] || DIRS=1

RES=$work/results.$$
: >"$RES"
M=$(mktemp -d)
PID=""
cleanup() {
	if mountpoint -q "$M" 2>/dev/null; then umount "$M" 2>/dev/null || umount -l "$M" || true; fi
	[[ -n $PID ]] && kill "$PID" 2>/dev/null || true
	rmdir "$M" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

dropcache() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# timed NAME OUT CMD...: run CMD under /usr/bin/time -v and record
# "NAME wall cpu rss_kib size" in RES (size: of OUT).
timed() {
	local name=$1 out=$2 tv; shift 2
	tv=$(mktemp)
	/usr/bin/time -v -o "$tv" "$@" || { cat "$tv" >&2; die "$name: $* failed"; }
	local wall cpu rss
	wall=$(awk -F': ' '/Elapsed/ {n = split($2, a, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + a[i]; print s}' "$tv")
	cpu=$(awk -F': ' '/User time/ {u = $2} /System time/ {s = $2} END {printf "%.2f", u + s}' "$tv")
	rss=$(awk -F': ' '/Maximum resident/ {print $2}' "$tv")
	rm -f "$tv"
	local size; size=$(stat -c %s "$out")
	printf '%s build %s %s %s %s\n' "$name" "$wall" "$cpu" "$rss" "$size" >>"$RES"
	log "$name: wall $wall s, CPU $cpu s, peak RSS $rss KiB, image $size bytes"
}

# openmount NAME IMAGE DWARFSCK DWARFS: time the open and the mount.
openmount() {
	local name=$1 img=$2 ck=$3 drv=$4 t t2
	if [[ " $SKIP " != *" open "* ]]; then
		dropcache
		t=$(now_ns)
		"$ck" -q --no-check "$img" >/dev/null 2>&1 || die "$name: $ck $img failed"
		t2=$(now_ns)
		printf '%s open %s\n' "$name" "$(secs "$t" "$t2")" >>"$RES"
	fi
	if [[ " $SKIP " != *" mount "* ]]; then
		dropcache
		# findmnt waits in poll(2) for the mount table to change, and
		# stat is the first request the driver answers: no polling loop
		# takes CPU from a driver that opens on both cores.
		findmnt --poll=mount --first-only --timeout 60000 --mountpoint "$M" >/dev/null &
		local fpid=$!
		sleep 0.1
		t=$(now_ns)
		"$drv" "$img" "$M" -f -o cachesize=512m >/dev/null 2>&1 &
		PID=$!
		wait "$fpid" || true
		stat "$M" >/dev/null
		t2=$(now_ns)
		mountpoint -q "$M" || die "$name did not mount $img"
		local rss; rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$PID/status")
		printf '%s mount %s %s\n' "$name" "$(secs "$t" "$t2")" "$rss" >>"$RES"
		umount "$M"
		wait "$PID" || true
		PID=""
	fi
}

golimit=()
[[ -n $MEMLIMIT ]] && golimit=(--memory-limit="$MEMLIMIT")
# shellcheck disable=SC2206
goopts=($GO_OPTS)
gomk=("$BIN/mkdwarfs" -l "$LEVEL" --no-progress --log-level warn -f "${golimit[@]}" "${goopts[@]}")
refmk=("$REF_MKDWARFS" -l "$LEVEL" --no-progress --log-level warn -f)

echo "# manyfiles: MODE=$MODE FILES=$FILES DIRS=$DIRS LEVEL=$LEVEL ROUNDS=$ROUNDS${MEMLIMIT:+ MEMLIMIT=$MEMLIMIT}${GO_OPTS:+ GO_OPTS=$GO_OPTS}"
machine_note

case $MODE in
tree)
	src=$BENCH_DIR/corpus/smalltext-$FILES
	if [[ ! -f $src.ready ]]; then
		rm -rf "$src"
		log "generating $FILES files in $DIRS directories into $src"
		"$gen" -shape smalltext -files "$FILES" -dirs "$DIRS" "$src" || die "gentree failed"
		touch "$src.ready"
	fi
	gimg=$work/godwarfs-$FILES.dwarfs rimg=$work/reference-$FILES.dwarfs
	if [[ " $SKIP " == *" build "* ]]; then
		[[ -f $gimg ]] || die "SKIP=build: no image $gimg from an earlier run"
		[[ -z $REFDIR || -f $rimg ]] || die "SKIP=build: no image $rimg from an earlier run"
	fi
	for ((r = 1; r <= ROUNDS; r++)); do
		[[ " $SKIP " == *" build "* ]] && break
		order=(godwarfs reference)
		((r % 2 == 0)) && order=(reference godwarfs)
		for who in "${order[@]}"; do
			dropcache
			if [[ $who == godwarfs ]]; then
				timed godwarfs "$gimg" "${gomk[@]}" -i "$src" -o "$gimg"
			elif [[ -n $REFDIR ]]; then
				timed reference "$rimg" "${refmk[@]}" -i "$src" -o "$rimg"
			fi
		done
	done
	;;
tar)
	gimg=$work/godwarfs-tar-$FILES.dwarfs rimg=$work/reference-tar-$FILES.dwarfs
	if [[ " $SKIP " == *" build "* ]]; then
		[[ -f $gimg ]] || die "SKIP=build: no image $gimg from an earlier run"
		[[ -z $REFDIR || -f $rimg ]] || die "SKIP=build: no image $rimg from an earlier run"
	else
		for ((r = 1; r <= ROUNDS; r++)); do
			dropcache
			# The generator's CPU is not the build's: time only mkdwarfs.
			"$gen" -tar -shape empty -files "$FILES" -dirs "$DIRS" |
				timed godwarfs "$gimg" "${gomk[@]}" -i - -o "$gimg"
		done
		log "checking the listing"
		diff <("$gen" -tar -shape empty -files "$FILES" -dirs "$DIRS" | tar -tf - | sed 's,/$,,' | LC_ALL=C sort) \
			<("$BIN/dwarfsck" --list "$gimg" | LC_ALL=C sort) >/dev/null ||
			die "the image's listing differs from the stream's"
		echo "listing: the image lists the same $FILES files and $DIRS+ directories as the stream"
		if [[ -n $REFDIR ]]; then
			log "reference: rebuilding the metadata of the godwarfs image"
			timed reference "$rimg" "${refmk[@]}" -i "$gimg" -o "$rimg" --rebuild-metadata
		fi
	fi
	;;
*) die "MODE $MODE: want tree or tar" ;;
esac

for ((r = 1; r <= ROUNDS; r++)); do
	if ((r % 2 == 1)) || [[ -z $REFDIR ]]; then
		openmount godwarfs "$gimg" "$BIN/dwarfsck" "$BIN/dwarfs"
		[[ -n $REFDIR ]] && openmount reference "$rimg" "$REFDIR/dwarfsck" "$REFDIR/dwarfs"
	else
		openmount reference "$rimg" "$REFDIR/dwarfsck" "$REFDIR/dwarfs"
		openmount godwarfs "$gimg" "$BIN/dwarfsck" "$BIN/dwarfs"
	fi
done

median() { sort -n | awk '{v[NR] = $1} END {if (NR == 0) print "n/a"; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
col() { awk -v n="$1" -v k="$2" -v c="$3" '$1 == n && $2 == k {print $c}' "$RES" | median; }
echo
printf '| %-22s | %10s | %10s | %10s |\n' "" godwarfs reference ratio
printf '|%s|%s|%s|%s|\n' "------------------------" "-----------:" "-----------:" "-----------:"
row() {
	local label=$1 g=$2 r=$3
	printf '| %-22s | %10s | %10s | %10s |\n' "$label" "$g" "$r" "$(ratio "$g" "$r")"
}
if [[ $MODE == tree && " $SKIP " != *" build "* ]]; then
	row "build wall s" "$(col godwarfs build 3)" "$(col reference build 3)"
	row "build CPU s" "$(col godwarfs build 4)" "$(col reference build 4)"
fi
grss=$(col godwarfs build 5) rrss=$(col reference build 5)
if [[ $grss != n/a ]]; then
	row "peak RSS MiB" "$(mib $((grss * 1024)))" "$([[ $rrss == n/a ]] && echo n/a || mib $((rrss * 1024)))"
	row "peak RSS B/file" "$((grss * 1024 / FILES))" "$([[ $rrss == n/a ]] && echo n/a || echo $((rrss * 1024 / FILES)))"
	row "image bytes" "$(col godwarfs build 6)" "$(col reference build 6)"
fi
row "open s" "$(col godwarfs open 3)" "$(col reference open 3)"
row "mount s" "$(col godwarfs mount 3)" "$(col reference mount 3)"
row "RSS after mount KiB" "$(col godwarfs mount 4)" "$(col reference mount 4)"
if [[ $MODE == tar ]]; then
	echo
	echo "godwarfs build from the stream: wall $(col godwarfs build 3) s, CPU $(col godwarfs build 4) s; reference row: --rebuild-metadata of the godwarfs image"
fi
echo
echo "raw: $RES"
