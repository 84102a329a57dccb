#!/usr/bin/env bash
# What a lazy mount from a container registry costs: pushes an image to a
# loopback registry (Debian's docker-registry), mounts it with the godwarfs
# dwarfs driver, takes the time to the first byte of a file, runs `ls -lR`
# and reads a working set of files, and reports the bytes fetched (the
# driver's transfer counters) as a share of the blob. Beside it, the same
# artifact fetched whole with `skopeo copy` (skipped, with the reason
# printed, when skopeo is missing). Caches are dropped before every run;
# runs alternate.
#
#   BENCH_DIR     output directory (default /var/tmp/godwarfs-bench)
#   BIN           godwarfs binaries (default <repo>/bin; built if missing)
#   LAZY_SRC      directory the image is built from (default: the Go root,
#                 /usr/bin and /usr/lib/x86_64-linux-gnu copied together,
#                 a toolchain container's shape)
#   LAZY_IMAGE    use this image instead of building one
#   LAZY_MKDWARFS mkdwarfs options (default "-S20": 1 MiB blocks, which
#                 a registry mount fetches one at a time)
#   FILES         size of the working set (default 20), picked at random
#                 among the regular files with a fixed seed
#   SEEDS         working sets to measure (default "1 2 3")
#   ROUNDS        time-to-first-byte pairs (default 3)
# Needs root (FUSE, dropping caches), docker-registry and getfattr.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_root "registry-lazy.sh"
need docker-registry "apt-get install docker-registry"
need getfattr "apt-get install attr"
ensure_bin dwarfs mkdwarfs dwarfsck
work=$BENCH_DIR/registry-lazy
mkdir -p "$work/mnt" "$BENCH_DIR/results"
files=${FILES:-20}

img=${LAZY_IMAGE:-}
if [[ -z $img ]]; then
	src=${LAZY_SRC:-}
	if [[ -z $src ]]; then
		src=$work/root
		if [[ ! -d $src/usr ]]; then
			log "copying the default tree into $src"
			mkdir -p "$src/usr/local" "$src/usr/lib"
			cp -a "$(go env GOROOT)" "$src/usr/local/go"
			cp -a /usr/bin "$src/usr/"
			cp -a /usr/lib/x86_64-linux-gnu "$src/usr/lib/"
		fi
	fi
	img=$work/image.dwarfs
	# shellcheck disable=SC2086
	[[ -f $img ]] || "$BIN/mkdwarfs" -i "$src" -o "$img" ${LAZY_MKDWARFS:--S20} --log-level warn
fi
size=$(stat -c %s "$img")

# A registry of our own on a free loopback port.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
rm -rf "$work/registry"
mkdir -p "$work/registry"
cat > "$work/registry/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $work/registry/storage
http:
  addr: 127.0.0.1:$port
EOF
env -u REGISTRY_AUTH_FILE docker-registry serve "$work/registry/config.yml" >"$work/registry/log" 2>&1 &
regpid=$!
trap 'fusermount3 -u "$work/mnt" 2>/dev/null || true; kill $regpid 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.1; done
ref=docker://127.0.0.1:$port/bench/lazy:v1
"$BIN/dwarfsck" --push="$ref" "$img" >/dev/null

# The working sets: regular files, listed through a local mount.
"$BIN/dwarfs" "$img" "$work/mnt"
(cd "$work/mnt" && find . -type f -size +0 | sed 's|^\./||' | sort) > "$work/files.txt"
fusermount3 -u "$work/mnt"

drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
now() { date +%s%N; }

report=$BENCH_DIR/results/registry-lazy.txt
{
	echo "image: $img, $size bytes; $(wc -l < "$work/files.txt") regular files"
	echo "working set: $files files; mount, ls -lR, cat of each"
	for seed in ${SEEDS:-1 2 3}; do
		shuf -n "$files" --random-source=<(yes "$seed") "$work/files.txt" > "$work/ws.txt"
		drop
		"$BIN/dwarfs" "$ref" "$work/mnt"
		ls -lR "$work/mnt" > /dev/null
		while read -r f; do cat "$work/mnt/$f" > /dev/null; done < "$work/ws.txt"
		fetched=$(getfattr --absolute-names --only-values -n user.dwarfs.driver.remote "$work/mnt" | sed 's/.*"bytes_fetched":\([0-9]*\).*/\1/')
		fusermount3 -u "$work/mnt"
		awk -v s="$seed" -v f="$fetched" -v n="$size" 'BEGIN { printf "seed %s: fetched %d bytes, %.2f%% of the blob\n", s, f, 100*f/n }'
	done
	first=$(head -1 "$work/ws.txt")
	if ! command -v skopeo >/dev/null; then
		echo "skopeo copy: skipped (skopeo is not installed: apt-get install skopeo)"
	fi
	mount_ttfb() {
		drop
		local t0 t1
		t0=$(now)
		"$BIN/dwarfs" "$ref" "$work/mnt"
		head -c1 "$work/mnt/$first" > /dev/null
		t1=$(now)
		fusermount3 -u "$work/mnt"
		echo $(( (t1-t0)/1000000 ))
	}
	skopeo_copy() {
		rm -rf "$work/copy"
		drop
		local t0 t1
		t0=$(now)
		skopeo copy -q --src-tls-verify=false "$ref" "dir:$work/copy" >/dev/null
		t1=$(now)
		rm -rf "$work/copy"
		echo $(( (t1-t0)/1000000 ))
	}
	for r in $(seq "${ROUNDS:-3}"); do
		if ! command -v skopeo >/dev/null; then
			echo "round $r: mount to first byte $(mount_ttfb) ms"
		elif (( r % 2 )); then
			m=$(mount_ttfb); c=$(skopeo_copy)
			echo "round $r: mount to first byte $m ms, skopeo copy $c ms"
		else
			c=$(skopeo_copy); m=$(mount_ttfb)
			echo "round $r: skopeo copy $c ms, mount to first byte $m ms"
		fi
	done
} | tee "$report"
log "written $report"
