#!/usr/bin/env bash
# A build from an S3 prefix against a build of the same directory: the
# corpus is copied into a loopback SeaweedFS, then mkdwarfs -i DIR and
# mkdwarfs -i s3://bench/CORPUS/ run alternately, the page cache dropped
# before each; both images are extracted and compared. Prints each pair's
# wall times and their ratio, and the median ratio.
#
#   BENCH_DIR   cache and output directory (default /var/tmp/godwarfs-bench)
#   BIN         directory with godwarfs binaries (default <repo>/bin; built if missing)
#   CORPUS      corpus directory (default $BENCH_DIR/corpus/redis)
#   RUNS        pairs to run (default 3)
#   MKARGS      extra mkdwarfs arguments for both builds
# Needs root (to drop the page cache) and the SeaweedFS binary
# (scripts/install-weed.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_root "s3input.sh"
ensure_bin mkdwarfs dwarfsextract
[[ -x $BIN/s3put ]] || (cd "$REPO_ROOT" && go build -o "$BIN/" ./bench/s3put) || die "cannot build bench/s3put"
"$REPO_ROOT/scripts/install-weed.sh" >/dev/null || die "cannot build SeaweedFS"
weed=$(ls -d "$HOME"/.cache/godwarfs/weed-*/weed | tail -1)
corpus=${CORPUS:-$BENCH_DIR/corpus/redis}
[[ -d $corpus ]] || die "no corpus at $corpus (bench/corpus.sh)"
name=$(basename "$corpus")
runs=${RUNS:-3}
work=$(mktemp -d "${TMPDIR:-/var/tmp}/s3input-bench.XXXXXX")
trap 'kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null; rm -rf "$work"' EXIT

# free_port: a loopback port that is free, and so is the one 10000 above
# it (SeaweedFS's gRPC port).
free_port() {
	python3 -c '
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    if p + 10000 > 65535: continue
    g = socket.socket()
    try: g.bind(("127.0.0.1", p + 10000))
    except OSError: continue
    print(p); break'
}
s3p=$(free_port); mp=$(free_port); vp=$(free_port); fp=$(free_port)
mkdir -p "$work/weed"
"$weed" server -dir="$work/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3 -s3.port="$s3p" \
	-master.port="$mp" -volume.port="$vp" -filer.port="$fp" \
	-master.volumeSizeLimitMB=1024 -volume.max=0 >"$work/weed.log" 2>&1 &
wpid=$!
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$s3p AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench \
	AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
for _ in $(seq 120); do
	curl -s "http://127.0.0.1:$s3p/" >/dev/null 2>&1 && break
	sleep 0.5
done
log "uploading $corpus to s3://bench/$name/"
for _ in $(seq 60); do "$BIN/s3put" "$corpus" "s3://bench/$name/" 2>"$work/put.log" && break; sleep 1; done
[[ ! -s $work/put.log ]] || die "upload failed: $(tail -3 "$work/put.log")"

drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
build() { # build KIND OUT
	local in=$corpus
	[[ $1 == s3 ]] && in=s3://bench/$name/
	rm -f "$2"
	drop
	local t0 t1
	t0=$(date +%s.%N)
	"$BIN/mkdwarfs" -i "$in" -o "$2" --no-progress --log-level warn ${MKARGS:-}
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc
}

ratios=()
for r in $(seq "$runs"); do
	# Alternate which build goes first.
	if ((r % 2)); then
		ts3=$(build s3 "$work/s3.dwarfs"); tdir=$(build dir "$work/dir.dwarfs")
	else
		tdir=$(build dir "$work/dir.dwarfs"); ts3=$(build s3 "$work/s3.dwarfs")
	fi
	ratio=$(echo "scale=3; $ts3 / $tdir" | bc)
	ratios+=("$ratio")
	printf 'run %d: directory %.1f s, s3 %.1f s, ratio %s\n' "$r" "$tdir" "$ts3" "$ratio"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
printf 'median ratio s3/directory: %s\n' "$median"
printf 'image sizes: directory %d, s3 %d bytes\n' "$(stat -c %s "$work/dir.dwarfs")" "$(stat -c %s "$work/s3.dwarfs")"

"$BIN/dwarfsextract" -i "$work/dir.dwarfs" -o "$work/x-dir"
"$BIN/dwarfsextract" -i "$work/s3.dwarfs" -o "$work/x-s3"
if diff -r "$work/x-dir" "$work/x-s3" >/dev/null && diff -r "$corpus" "$work/x-s3" >/dev/null; then
	echo "extraction: identical contents (and the same tree as $corpus)"
else
	echo "extraction: DIFFERENT"
	exit 1
fi
