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
# GOROOT_SRC is the toolchain to pack (default: `go env GOROOT`), with
# the mkdwarfs options MKDWARFS_OPTS (default: none; the default level's
# zstd:level=22 takes minutes on a busy machine, -l4 seconds). REF_DWARFS
# defaults to ~/.cache/reference-dwarfs/dwarfs when that exists. The
# reference and squashfuse parts are skipped, with a message, when there
# is no reference driver or squashfuse/mksquashfs are missing. The order
# of the three runs turns each round; the ratios are the medians of the
# rounds' ratios. Needs root (drop_caches).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_root "dropping the page cache"
ROUNDS=${ROUNDS:-5}
ensure_bin mkdwarfs
mkdir -p "$BIN"
# As make build and make cross build it (RUNTIMEFLAGS), stripped.
(cd "$REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -tags corecodecs -o "$BIN/dwarfs-run" ./cmd/dwarfs-run) || die "building dwarfs-run failed"
goroot=${GOROOT_SRC:-$(go env GOROOT)}
work=${WORK:-$BENCH_DIR/runtime}
rm -rf "$work"
mkdir -p "$work/app/pkg" "$work/mnt"
cp -a "$goroot/bin" "$work/app/bin"
cp -a "$goroot/pkg/tool" "$work/app/pkg/tool"
# With HOLD set, AppRun waits for that file once go has answered, so
# that the runtime's peak RSS can be read while it still serves.
cat >"$work/app/AppRun" <<'APPRUN'
#!/bin/sh
[ -z "$HOLD" ] && GOROOT="$APPDIR" exec "$APPDIR/bin/go" version
GOROOT="$APPDIR" "$APPDIR/bin/go" version
while [ ! -e "$HOLD" ]; do sleep 0.05; done
APPRUN
chmod +x "$work/app/AppRun"

log "packing $(du -sh "$work/app" | cut -f1) of $goroot"
# shellcheck disable=SC2086 # MKDWARFS_OPTS is a list of options
"$BIN/mkdwarfs" -i "$work/app" -o "$work/app.run" --runtime="$BIN/dwarfs-run" --no-progress ${MKDWARFS_OPTS:-}
# shellcheck disable=SC2086
"$BIN/mkdwarfs" -i "$work/app" -o "$work/app.dwarfs" --no-progress ${MKDWARFS_OPTS:-}
rt_size=$(stat -c %s "$BIN/dwarfs-run")
run_size=$(stat -c %s "$work/app.run")
img_size=$(stat -c %s "$work/app.dwarfs")

ref=${REF_DWARFS:-}
[[ -z $ref && -x $HOME/.cache/reference-dwarfs/dwarfs ]] && ref=$HOME/.cache/reference-dwarfs/dwarfs
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
ratios_ref="" ratios_sqfs=""
kinds=(run)
[[ -n $ref ]] && kinds+=(ref)
[[ -n $sqfs ]] && kinds+=(sqfs)
for r in $(seq "$ROUNDS"); do
	# Each round starts at another of the runs.
	order=("${kinds[@]:$(((r - 1) % ${#kinds[@]}))}" "${kinds[@]:0:$(((r - 1) % ${#kinds[@]}))}")
	declare -A t=()
	for k in "${order[@]}"; do
		cold
		case $k in
		run) t[run]=$(first_output "$work/app.run") ;;
		ref) t[ref]=$(mounted fusermount3\ -u "$ref" "$work/app.dwarfs") ;;
		sqfs) t[sqfs]=$(mounted fusermount3\ -u squashfuse "$sqfs") ;;
		esac
		sum[$k]="${sum[$k]:-} ${t[$k]}"
	done
	log "round $r, in the order ${order[*]}: $(for k in "${kinds[@]}"; do printf '%s=%ss ' "$k" "${t[$k]}"; done)"
	[[ -n $ref ]] && ratios_ref="$ratios_ref $(ratio "${t[run]}" "${t[ref]}")"
	[[ -n $sqfs ]] && ratios_sqfs="$ratios_sqfs $(ratio "${t[run]}" "${t[sqfs]}")"
	unset t
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print (NR ? a[int((NR + 1) / 2)] : "n/a") }'; }

# The runtime's peak RSS (VmHWM of the process that serves the mount),
# read while AppRun holds on, after go has answered, page cache cold.
cold
rm -f "$work/hold"
HOLD=$work/hold "$work/app.run" >"$work/out" &
pid=$!
while ! [[ -s $work/out ]] && kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
rss=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo n/a)
touch "$work/hold"
wait "$pid" || die "the packed file failed: $(cat "$work/out")"

machine_note
printf '%-32s %s\n' "time to first output (median of $ROUNDS, cold):" ""
printf '  %-30s %s s\n' "dwarfs-run" "$(median <<<"${sum[run]}")"
[[ -n $ref ]] && printf '  %-30s %s s (dwarfs-run %s x)\n' "reference dwarfs + AppRun" "$(median <<<"${sum[ref]}")" "$(median <<<"$ratios_ref")"
[[ -n $sqfs ]] && printf '  %-30s %s s (dwarfs-run %s x)\n' "squashfuse + AppRun" "$(median <<<"${sum[sqfs]}")" "$(median <<<"$ratios_sqfs")"
printf '%-32s\n' "sizes:"
printf '  %-30s %s bytes\n' "runtime" "$rt_size"
printf '  %-30s %s bytes (%s x image + runtime)\n' "packed file" "$run_size" "$(awk -v a="$run_size" -v b=$((img_size + rt_size)) 'BEGIN { printf "%.4f", a / b }')"
printf '  %-30s %s bytes\n' "image" "$img_size"
[[ -n $sqfs ]] && printf '  %-30s %s bytes (%s x the image)\n' "squashfs (zstd)" "$(stat -c %s "$sqfs")" "$(ratio "$(stat -c %s "$sqfs")" "$img_size")"
printf '%-32s %s KiB\n' "runtime peak RSS:" "$rss"
