#!/usr/bin/env bash
# make bench-build: image size, wall time, CPU time and peak RSS of mkdwarfs
# against mksquashfs (and mkfs.erofs when present) on each corpus.
#
#   BENCH_DIR  cache and output directory (default /var/tmp/godwarfs-bench)
#   BIN        directory with godwarfs binaries (default <repo>/bin; built if missing)
#   QUICK=1    small corpora, finishes in a few minutes
#   TOOLS      subset of: dwarfs-l7 dwarfs-l9 sqfs-zstd22 sqfs-xz erofs-lz4hc
#   CORPORA    override corpus list (xtools goroot xtools-quick goroot-quick)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

HAVE_EROFS=0
command -v mkfs.erofs >/dev/null 2>&1 && HAVE_EROFS=1
DEFAULT_TOOLS="dwarfs-l7 dwarfs-l9 sqfs-zstd22 sqfs-xz"
[[ $HAVE_EROFS == 1 ]] && DEFAULT_TOOLS+=" erofs-lz4hc"
TOOLS=${TOOLS:-$DEFAULT_TOOLS}

need /usr/bin/time "install the 'time' package (GNU time)"
[[ $(/usr/bin/time -v true 2>&1) == *'Maximum resident set size'* ]] || die "/usr/bin/time is not GNU time"
for t in $TOOLS; do
	case $t in
	dwarfs-*) ensure_bin mkdwarfs ;;
	sqfs-*) need mksquashfs "install squashfs-tools" ;;
	erofs-*) need mkfs.erofs "install erofs-utils" ;;
	*) die "unknown tool $t" ;;
	esac
done

"$BENCH_SRC/corpus.sh" >/dev/null
OUT=$BENCH_DIR/results
mkdir -p "$OUT"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT=$OUT/build-$STAMP.md

# run_tool TOOL CORPUS_DIR IMAGE: run the builder under GNU time; prints
# "size wall user sys rss_kb rc".
run_tool() {
	local tool=$1 src=$2 img=$3
	local tf=$OUT/.time.$$ lf
	lf=$OUT/build-$STAMP-$(basename "$(dirname "$img")")-$(basename "$img").log
	rm -f "$img"
	local -a cmd
	case $tool in
	dwarfs-l7) cmd=("$BIN/mkdwarfs" -i "$src" -o "$img" -l 7) ;;
	dwarfs-l9) cmd=("$BIN/mkdwarfs" -i "$src" -o "$img" -l 9) ;;
	sqfs-zstd22) cmd=(mksquashfs "$src" "$img" -comp zstd -Xcompression-level 22 -b 1M -noappend -processors 2 -no-progress) ;;
	sqfs-xz) cmd=(mksquashfs "$src" "$img" -comp xz -b 1M -noappend -processors 2 -no-progress) ;;
	erofs-lz4hc) cmd=(mkfs.erofs -zlz4hc,12 "$img" "$src") ;;
	esac
	log "  $tool: ${cmd[*]}"
	echo "${cmd[*]}" >>"$OUT/build-$STAMP.commands"
	local rc=0
	/usr/bin/time -v -o "$tf" "${cmd[@]}" >"$lf" 2>&1 || rc=$?
	if [[ $rc -ne 0 ]]; then
		log "  $tool FAILED (rc=$rc), see $lf"; tail -5 "$lf" >&2 || true
	fi
	local size=n/a
	[[ $rc -eq 0 && -s $img ]] && size=$(stat -c %s "$img")
	awk -F': ' -v size="$size" -v rc="$rc" '
		/Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
		/User time \(seconds\)/ { u = $2 }
		/System time \(seconds\)/ { s = $2 }
		/Maximum resident set size/ { r = $2 }
		END { printf "%s %.2f %s %s %s %s\n", size, w, u, s, r, rc }' "$tf"
	rm -f "$tf"
}

{
	echo "# godwarfs bench-build ($STAMP)"
	echo
	machine_note
	echo "- mkdwarfs: $BIN/mkdwarfs; mksquashfs: $(mksquashfs -version 2>/dev/null | head -1 || echo n/a)"
	echo "- each builder runs once, corpus pre-read into the page cache; wall/CPU/RSS from GNU time -v"
	echo
} >"$REPORT"

for c in $(corpora); do
	check_corpus "$c"
	src=$(corpus_dir "$c")
	imgdir=$BENCH_DIR/images/$c
	mkdir -p "$imgdir"
	files=$(find "$src" -type f | wc -l)
	bytes=$(du -sb "$src" | cut -f1)
	log "corpus $c: $files files, $(mib "$bytes") MiB"
	tar -cf - -C "$src" . | cat >/dev/null # warm the page cache for every builder alike
	declare -A R=()
	for t in $TOOLS; do
		case $t in dwarfs-*) ext=dwarfs ;; sqfs-*) ext=sqfs ;; erofs-*) ext=erofs ;; esac
		R[$t]=$(run_tool "$t" "$src" "$imgdir/$t.$ext")
	done
	# Baseline: mksquashfs zstd-22.
	read -r bsize bwall buser bsys brss _ <<<"${R[sqfs-zstd22]:-n/a n/a 0 0 n/a n/a}"
	bcpu=$(awk -v u="$buser" -v s="$bsys" 'BEGIN { printf "%.2f", u + s }')
	{
		echo "## corpus $c ($files files, $(mib "$bytes") MiB)"
		echo
		echo "| tool | image MiB | size vs sqfs-zstd22 | wall s | wall vs sqfs-zstd22 | CPU s (user+sys) | CPU vs sqfs-zstd22 | peak RSS MiB | RSS vs sqfs-zstd22 | compression |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		for t in $TOOLS; do
			read -r size wall user sys rss rc <<<"${R[$t]}"
			cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
			rssb=$(awk -v r="$rss" 'BEGIN { print r * 1024 }')
			brssb=$(awk -v r="$brss" 'BEGIN { print r * 1024 }')
			name=$t; [[ $rc != 0 ]] && name="$t (FAILED rc=$rc)"
			echo "| $name | $(mib "$size") | $(ratio "$size" "$bsize") | $wall | $(ratio "$wall" "$bwall") | $cpu | $(ratio "$cpu" "$bcpu") | $(mib "$rssb") | $(ratio "$rssb" "$brssb") | $(ratio "$bytes" "$size") |"
		done
		echo
	} >>"$REPORT"
	unset R
done
{
	echo "commands:"
	echo '```'
	cat "$OUT/build-$STAMP.commands"
	echo '```'
} >>"$REPORT"
rm -f "$OUT/build-$STAMP.commands"
cp "$REPORT" "$OUT/build-latest.md"
cat "$REPORT"
log "report: $REPORT"
