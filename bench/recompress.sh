#!/usr/bin/env bash
# Peak memory and time of `mkdwarfs --recompress` on a ~1 GiB image, beside a
# fresh mkdwarfs of the same tree with the same block compression.
# The tree is made of base64-encoded random data (compressible to ~75 % by
# entropy coding, no repeats), so neither run can shortcut through dedup.
# lz4 has no entropy coder, so the first image's blocks are stored
# uncompressed; the second recompression reads zstd blocks and so measures
# the decoding side too.
# Usage: bench/recompress.sh   (SIZE_MB=780 by default; QUICK=1 uses 100)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need /usr/bin/time "Debian package time"
ensure_bin mkdwarfs dwarfsck

size_mb=${SIZE_MB:-780}
[[ $QUICK == 1 ]] && size_mb=100
work=$BENCH_DIR/recompress-$size_mb
src=$work/tree
mkdir -p "$work"
if [[ ! -d $src ]]; then
	log "making $src from ${size_mb} MiB of random data"
	mkdir -p "$src.tmp"
	head -c "${size_mb}M" /dev/urandom | base64 -w 0 | (cd "$src.tmp" && split -b 16M - part.)
	mv "$src.tmp" "$src"
fi

peak() { awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2/1024}' "$1"; }
wall() { awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$1"; }

log "input image: lz4 blocks of 16 MiB"
"$BIN/mkdwarfs" -i "$src" -o "$work/in.dwarfs" -C lz4 -S 24 --progress=none -f
/usr/bin/time -v "$BIN/mkdwarfs" -i "$work/in.dwarfs" -o "$work/re.dwarfs" --recompress -C zstd:level=9 -f \
	2>"$work/re.time" >/dev/null
/usr/bin/time -v "$BIN/mkdwarfs" -i "$work/re.dwarfs" -o "$work/re-lz4.dwarfs" --recompress -C lz4 -f \
	2>"$work/re-lz4.time" >/dev/null
/usr/bin/time -v "$BIN/mkdwarfs" -i "$src" -o "$work/fresh.dwarfs" -C zstd:level=9 -S 24 --progress=none -f \
	2>"$work/fresh.time" >/dev/null
"$BIN/dwarfsck" --check-integrity "$work/re.dwarfs" >/dev/null
"$BIN/dwarfsck" --check-integrity "$work/re-lz4.dwarfs" >/dev/null

meta_bytes=$("$BIN/dwarfsck" --json "$work/in.dwarfs" | sed -n 's/.*"uncompressed_metadata_size":\([0-9]*\).*/\1/p')
in_size=$(stat -c %s "$work/in.dwarfs")
printf '| run | input | output MiB | wall | peak RSS MiB |\n|---|---|---:|---|---:|\n'
printf '| recompress stored -> zstd:9 | %.1f MiB image | %.1f | %s | %s |\n' "$(echo "$in_size/1048576" | bc -l)" \
	"$(echo "$(stat -c %s "$work/re.dwarfs")/1048576" | bc -l)" "$(wall "$work/re.time")" "$(peak "$work/re.time")"
printf '| recompress zstd:9 -> lz4 | %.1f MiB image | %.1f | %s | %s |\n' "$(echo "$(stat -c %s "$work/re.dwarfs")/1048576" | bc -l)" \
	"$(echo "$(stat -c %s "$work/re-lz4.dwarfs")/1048576" | bc -l)" "$(wall "$work/re-lz4.time")" "$(peak "$work/re-lz4.time")"
printf '| fresh mkdwarfs -C zstd:9 | %s MiB tree | %.1f | %s | %s |\n' "$size_mb" \
	"$(echo "$(stat -c %s "$work/fresh.dwarfs")/1048576" | bc -l)" "$(wall "$work/fresh.time")" "$(peak "$work/fresh.time")"
echo
echo "bound: 8 blocks x 16 MiB + metadata ($((meta_bytes / 1024)) KiB) = $((128 + meta_bytes / 1048576)) MiB"
