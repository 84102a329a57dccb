#!/usr/bin/env bash
# What opening a large remote image costs: builds an image of at least
# 1 GiB from real files, serves it from loopback S3 (SeaweedFS) and HTTP
# (nginx), mounts it with the godwarfs dwarfs driver, runs `ls -lR` of the
# whole tree and reads one small file, and reports the bytes and requests
# each step fetched (from the driver's transfer counters). Fails unless
# mount + `ls -lR` fetch under 1% of the object and the small file no more
# than the blocks that hold it.
#
#   BENCH_DIR      output directory (default /var/tmp/godwarfs-bench)
#   BIN            godwarfs binaries (default <repo>/bin; built if missing)
#   OPEN_SRC       directories the image is built from (default: the Go
#                  root, the Go module cache and /usr/lib)
#   OPEN_MKDWARFS  mkdwarfs options (default "-l 1": 1 MiB lz4 blocks,
#                  uncompressed metadata, the most headers and the largest
#                  metadata per byte of data)
#   OPEN_IMAGE     use this image instead of building one (kept)
#   KEEP_IMAGE=1   keep the built image (default: deleted at the end)
#   REMOTE_DELAY   delay per request of a third source, nginx behind a
#                  proxy, standing in for a distant server (default 10ms;
#                  0 = leave it out)
# Needs root (FUSE), nginx and SeaweedFS (scripts/install-weed.sh), about
# 2x the image size free below BENCH_DIR and /tmp.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_root "remote-open.sh"
ensure_bin dwarfs mkdwarfs dwarfsck
[[ -e /dev/fuse ]] || die "/dev/fuse missing"
"$REPO_ROOT/scripts/install-weed.sh" >/dev/null || die "cannot build SeaweedFS"
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || die "nginx missing (apt-get install nginx-light)"
mkdir -p "$BENCH_DIR/results"

img=${OPEN_IMAGE:-}
if [[ -z $img ]]; then
	img=$BENCH_DIR/remote-open/image.dwarfs
	mkdir -p "$(dirname "$img")"
	if [[ ${KEEP_IMAGE:-0} != 1 ]]; then
		trap 'rm -f "$img" "$img.tmp" "$img.list"' EXIT
	fi
	if [[ ! -f $img ]]; then
		src=${OPEN_SRC:-$(go env GOROOT) $(go env GOMODCACHE) /usr/lib}
		rels=()
		for d in $src; do
			d=$(realpath "$d")
			[[ -d $d ]] || die "OPEN_SRC: $d is not a directory"
			rels+=("${d#/}")
		done
		# Paths relative to / in one list, so that several trees go into
		# one image without copying them.
		(cd / && find "${rels[@]}" -xdev \( -type f -o -type l \) -print | LC_ALL=C sort) >"$img.list"
		log "building $img from $src ($(wc -l <"$img.list") files), mkdwarfs ${OPEN_MKDWARFS:--l 1}"
		t0=$(now_ns)
		rc=0
		# shellcheck disable=SC2086
		"$BIN/mkdwarfs" -i / --input-list "$img.list" -o "$img.tmp" ${OPEN_MKDWARFS:--l 1} \
			--no-progress --log-level error --continue-on-error || rc=$?
		[[ $rc == 0 || $rc == 2 ]] || die "mkdwarfs failed ($rc)"
		mv "$img.tmp" "$img"
		log "built in $(secs "$t0" "$(now_ns)") s"
	fi
fi
size=$(stat -c %s "$img")
((size >= 1 << 30)) || die "$img has $size bytes, less than 1 GiB: add directories to OPEN_SRC"
"$BIN/dwarfsck" "$img" 2>/dev/null | grep -E '^(block size|block count|inode count|compressed (block|metadata) size)' >&2 || true

report=$BENCH_DIR/results/remote-open-$(date -u +%Y%m%dT%H%M%SZ).md
cd "$REPO_ROOT"
GODWARFS_BENCH_OPEN_IMAGE=$img BIN=$BIN BENCH_REPORT=$report GODWARFS_REQUIRE_REMOTE=1 REMOTE_DELAY=${REMOTE_DELAY:-10ms} \
	go test -tags benchremote -count=1 -timeout 90m -run '^TestBenchRemoteOpen$' -v ./bench/remote/ | grep -v '^=== RUN'
log "report: $report"
