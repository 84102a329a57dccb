#!/usr/bin/env bash
# Self-mounting executables (issue "an application in one file"): packs
# the Go toolchain's bin/ and pkg/tool/ with an AppRun that runs
# `go version` behind dwarfs-run, and measures, alternated and with a
# cold page cache each time:
#   - time to the entry's first output: the packed file run directly;
#     the same image mounted with the reference dwarfs driver (REF_DWARFS)
#     and AppRun run from the mount; a squashfs image of the same tree
#     mounted with squashfuse;
#   - file sizes: packed file, image + runtime, squashfs image;
#   - the runtime's peak RSS.
#
#   ROUNDS=5 REF_DWARFS=/path/to/dwarfs bench/runtime.sh
#
# GOROOT_SRC is the toolchain to pack (default: `go env GOROOT`). The
# reference and squashfuse parts are skipped, with a message, when
# REF_DWARFS is unset or squashfuse/mksquashfs are missing. Needs root
# (drop_caches).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_root "dropping the page cache"
ROUNDS=${ROUNDS:-5}
ensure_bin mkdwarfs
mkdir -p "$BIN"
(cd "$REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$BIN/dwarfs-run" ./cmd/dwarfs-run) || die "building dwarfs-run failed"
goroot=${GOROOT_SRC:-$(go env GOROOT)}
work=${WORK:-$BENCH_DIR/runtime}
rm -rf "$work"
mkdir -p "$work/app/pkg" "$work/mnt"
cp -a "$goroot/bin" "$work/app/bin"
cp -a "$goroot/pkg/tool" "$work/app/pkg/tool"
cat >"$work/app/AppRun" <<'APPRUN'
#!/bin/sh
GOROOT="$APPDIR" exec "$APPDIR/bin/go" version
APPRUN
chmod +x "$work/app/AppRun"

log "packing $(du -sh "$work/app" | cut -f1) of $goroot"
"$BIN/mkdwarfs" -i "$work/app" -o "$work/app.run" --runtime="$BIN/dwarfs-run" --no-progress
"$BIN/mkdwarfs" -i "$work/app" -o "$work/app.dwarfs" --no-progress
rt_size=$(stat -c %s "$BIN/dwarfs-run")
run_size=$(stat -c %s "$work/app.run")
img_size=$(stat -c %s "$work/app.dwarfs")

ref=${REF_DWARFS:-}
[[ -n $ref && ! -x $ref ]] && die "REF_DWARFS=$ref is not executable"
[[ -z $ref ]] && log "REF_DWARFS not set: skipping the reference driver"
sqfs=""
if command -v squashfuse >/dev/null && command -v mksquashfs >/dev/null; then
	mksquashfs "$work/app" "$work/app.sqfs" -comp zstd -quiet -noappend >/dev/null
	sqfs=$work/app.sqfs
else
	log "squashfuse or mksquashfs missing (apt-get install squashfuse squashfs-tools): skipping squashfs"
fi

cold() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# first_output CMD...: seconds until CMD writes its first line.
first_output() {
	local t0 t1
	t0=$(now_ns)
	"$@" | { IFS= read -r _; t1=$(now_ns); cat >/dev/null; secs "$t0" "$t1"; }
}
# mounted DRIVER_CMD UNMOUNT: mount, time AppRun from the mount, unmount.
mounted() {
	local umount=$1; shift
	local t0 t1
	t0=$(now_ns)
	"$@" "$work/mnt" >/dev/null 2>&1
	APPDIR=$work/mnt "$work/mnt/AppRun" | { IFS= read -r _; t1=$(now_ns); cat >/dev/null; secs "$t0" "$t1"; }
	$umount "$work/mnt" >/dev/null 2>&1 || umount -l "$work/mnt"
}

declare -A sum
for r in $(seq "$ROUNDS"); do
	cold; t=$(first_output "$work/app.run"); sum[run]="${sum[run]:-} $t"
	if [[ -n $ref ]]; then
		cold; t=$(mounted fusermount3\ -u "$ref" "$work/app.dwarfs"); sum[ref]="${sum[ref]:-} $t"
	fi
	if [[ -n $sqfs ]]; then
		cold; t=$(mounted fusermount3\ -u squashfuse "$sqfs"); sum[sqfs]="${sum[sqfs]:-} $t"
	fi
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print (NR ? a[int((NR + 1) / 2)] : "n/a") }'; }
rss=$( { /usr/bin/time -f %M "$work/app.run" >/dev/null; } 2>&1 | tail -1)

machine_note
printf '%-32s %s\n' "time to first output (median of $ROUNDS, cold):" ""
printf '  %-30s %s s\n' "dwarfs-run" "$(median <<<"${sum[run]}")"
[[ -n $ref ]] && printf '  %-30s %s s\n' "reference dwarfs + AppRun" "$(median <<<"${sum[ref]}")"
[[ -n $sqfs ]] && printf '  %-30s %s s\n' "squashfuse + AppRun" "$(median <<<"${sum[sqfs]}")"
printf '%-32s\n' "sizes:"
printf '  %-30s %s MiB\n' "runtime" "$(mib "$rt_size")"
printf '  %-30s %s MiB (%s x image + runtime)\n' "packed file" "$(mib "$run_size")" "$(ratio "$run_size" $((img_size + rt_size)))"
printf '  %-30s %s MiB\n' "image" "$(mib "$img_size")"
[[ -n $sqfs ]] && printf '  %-30s %s MiB\n' "squashfs" "$(mib "$(stat -c %s "$sqfs")")"
printf '%-32s %s KiB\n' "runtime peak RSS:" "$rss"
