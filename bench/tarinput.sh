#!/usr/bin/env bash
# Building from a tar archive against building from the extracted tree
# (issue "build an image straight from a tar archive"), side by side in one
# run. SRC is archived once with GNU tar (and compressed with zstd), then:
#
#   dir      mkdwarfs -i TREE          (TREE: the archive extracted once)
#   tar      mkdwarfs -i SRC.tar       (read in place)
#   zst|     zstd -dc SRC.tar.zst | mkdwarfs -i -
#   x+dir    tar -xf SRC.tar into a fresh directory, then mkdwarfs on it
#   sqfstar  sqfstar on the same archive and on the zstd pipe
#
# Wall time, CPU time, peak RSS and size; the image from the tar and from
# the pipe must list and extract like the directory's. ROUNDS (default 1)
# repeats the dwarfs runs with their order rotated; medians are reported.
#
#   SRC=/usr LEVEL=3 bench/tarinput.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
SRC=${SRC:?SRC=DIR to archive}
LEVEL=${LEVEL:-3}
ROUNDS=${ROUNDS:-1}
NAME=${NAME:-$(basename "$SRC")}
need tar
need zstd
need /usr/bin/time
ensure_bin mkdwarfs dwarfsck dwarfsextract
work=${WORK:-$BENCH_DIR/tarinput-$NAME}
mkdir -p "$work"
tarf=$work/$NAME.tar
if [[ ! -f $tarf.done ]]; then
	log "archiving $SRC"
	rm -rf "$work/tree"
	tar -C "$SRC" --one-file-system --sparse -cf "$tarf" .
	zstd -q -T0 -3 -f "$tarf" -o "$tarf.zst"
	mkdir "$work/tree"
	tar -C "$work/tree" -xpf "$tarf"
	touch "$tarf.done"
fi
mk=("$BIN/mkdwarfs" -l "$LEVEL" --no-progress --log-level warn -N "$(nproc)" --no-history --no-create-timestamp -f)
res=$work/results
rm -rf "$res" && mkdir -p "$res"
# run LABEL CMD...: append "wall cpu rss_kib" to $res/LABEL.
run() {
	local label=$1
	shift
	sync
	/usr/bin/time -o "$res/$label.time" -f '%e %U %S %M' bash -c "$*"
	awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$res/$label.time" >>"$res/$label"
}
case_cmd() {
	case $1 in
	dir) echo "${mk[*]} -i '$work/tree' -o '$work/dir.dwarfs'" ;;
	tar) echo "${mk[*]} -i '$tarf' -o '$work/tar.dwarfs'" ;;
	zst) echo "zstd -dc '$tarf.zst' | ${mk[*]} -i - -o '$work/zst.dwarfs'" ;;
	xdir) echo "rm -rf '$work/x' && mkdir '$work/x' && tar -C '$work/x' -xpf '$tarf' && ${mk[*]} -i '$work/x' -o '$work/xdir.dwarfs'" ;;
	esac
}
cases=(dir tar zst xdir)
for ((r = 0; r < ROUNDS; r++)); do
	for ((i = 0; i < ${#cases[@]}; i++)); do
		c=${cases[(i + r) % ${#cases[@]}]}
		log "round $((r + 1)): $c"
		run "$c" "$(case_cmd "$c")"
	done
done
rm -rf "$work/x"
if command -v sqfstar >/dev/null; then
	log "sqfstar"
	run sqfstar "rm -f '$work/s.sqfs'; sqfstar -quiet -no-progress '$work/s.sqfs' <'$tarf'"
	run sqfstar-zst "rm -f '$work/sz.sqfs'; zstd -dc '$tarf.zst' | sqfstar -quiet -no-progress '$work/sz.sqfs'"
fi
# The images must hold the same tree.
for c in tar zst; do
	cmp -s <("$BIN/dwarfsck" --list "$work/dir.dwarfs") <("$BIN/dwarfsck" --list "$work/$c.dwarfs") ||
		die "$c image lists differently from the directory's"
done
rm -rf "$work/e1" "$work/e2" && mkdir "$work/e1" "$work/e2"
"$BIN/dwarfsextract" -i "$work/dir.dwarfs" -o "$work/e1"
"$BIN/dwarfsextract" -i "$work/tar.dwarfs" -o "$work/e2"
diff -r --no-dereference "$work/e1" "$work/e2" >/dev/null || die "tar image extracts differently"
rm -rf "$work/e1" "$work/e2"
identical=no
cmp -s "$work/dir.dwarfs" "$work/tar.dwarfs" && cmp -s "$work/dir.dwarfs" "$work/zst.dwarfs" && identical=yes
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
col() { awk -v c="$2" '{ print $c }' "$res/$1" | median; }
size() { stat -c %s "$1"; }
{
	echo "# tar input: $NAME ($(du -sb "$work/tree" | cut -f1) bytes, $(find "$work/tree" | wc -l) entries), -l$LEVEL, medians of $ROUNDS"
	machine_note
	echo
	echo "| build | wall s | CPU s | peak RSS MiB | image bytes | wall / dir |"
	echo "|---|---:|---:|---:|---:|---:|"
	dw=$(col dir 1)
	for c in dir tar zst xdir sqfstar sqfstar-zst; do
		[[ -f $res/$c ]] || continue
		case $c in
		dir | tar | zst | xdir) img=$work/$c.dwarfs ;;
		sqfstar) img=$work/s.sqfs ;;
		sqfstar-zst) img=$work/sz.sqfs ;;
		esac
		printf '| %s | %s | %s | %s | %s | %s |\n' "$c" "$(col "$c" 1)" "$(col "$c" 2)" "$(mib $(($(col "$c" 3) * 1024)))" "$(size "$img")" "$(ratio "$(col "$c" 1)" "$dw")"
	done
	echo
	echo "peak RSS tar / dir: $(ratio "$(col tar 3)" "$(col dir 3)"), zst / dir: $(ratio "$(col zst 3)" "$(col dir 3)"); images byte-identical: $identical"
	echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$BENCH_DIR/results/tarinput-$NAME-$(date -u +%Y%m%dT%H%M%SZ).md"
