#!/usr/bin/env bash
# bench/distributed.sh: what a sharded build on N machines would take,
# measured one shard at a time on this machine. The tree is put into a
# loopback S3 server (SeaweedFS); then, alternating which goes first in each
# round:
#   - the single build: mkdwarfs -i s3://bench/TREE/ -o s3://bench/single.dwarfs
#   - the sharded build: mkdwarfs -i s3://bench/TREE/ --shard=K/N -o
#     s3://bench/shards/shard-K.dwarfs for each K, one after another, then
#     mkdwarfs --merge 's3://bench/shards/shard-*.dwarfs' -o s3://bench/merged.dwarfs
# Reports the single build's wall time against the largest shard's plus the
# merge's (what N machines would take), the sizes of the merged and single
# images, and the bytes moved from and to S3 (the objects each build read,
# from the listing and the shard plan, and the objects it wrote); ratios are
# medians over the rounds. The merged image is extracted and compared with
# the tree.
#
#   BENCH_DIR  cache and output directory (default /var/tmp/godwarfs-bench)
#   BIN        godwarfs binaries (default <repo>/bin; built if missing)
#   CORPUS     the tree (default cdnjs-small; bench/corpus.sh makes it)
#   SHARDS     N (default 4)
#   LEVEL      mkdwarfs -l (default 7)
#   ROUNDS     rounds, each with both builds (default 2)
#   MKDWARFS_ARGS  more options for every build
#   CHECK=0    skip extracting the merged image
# Needs root (to drop the page cache between builds), curl, python3 and the
# SeaweedFS binary (scripts/install-weed.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CORPUS=${CORPUS:-cdnjs-small}
SHARDS=${SHARDS:-4}
LEVEL=${LEVEL:-7}
ROUNDS=${ROUNDS:-2}
check_corpus "$CORPUS"
need_root "dropping the page cache"
need curl
need python3
ensure_bin mkdwarfs dwarfsextract
weed=$("$REPO_ROOT/scripts/install-weed.sh") || die "cannot build SeaweedFS"
src=$(corpus_dir "$CORPUS")
work=$BENCH_DIR/distributed-$CORPUS
rm -rf "$work"
mkdir -p "$work" "$BENCH_DIR/results"
report=$BENCH_DIR/results/distributed-$(date -u +%Y%m%dT%H%M%SZ).md

# SeaweedFS serves gRPC on port+10000: both must be free.
port() {
	python3 -c '
import random, socket
while True:
    p = random.randint(20000, 50000)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass'
}
s3p=$(port) mp=$(port) vp=$(port) fp=$(port)
mkdir -p "$work/weed"
"$weed" server -dir="$work/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3 -s3.port="$s3p" \
	-master.port="$mp" -volume.port="$vp" -filer.port="$fp" -master.volumeSizeLimitMB=1024 -volume.max=0 \
	>"$work/weed.log" 2>&1 &
wpid=$!
stop_weed() {
	kill "$wpid" 2>/dev/null || return 0
	for _ in $(seq 50); do kill -0 "$wpid" 2>/dev/null || return 0; sleep 0.2; done
	kill -9 "$wpid" 2>/dev/null || true
}
trap stop_weed EXIT
url=http://127.0.0.1:$s3p
for _ in $(seq 300); do
	curl -fs -X PUT "$url/bench" >/dev/null 2>&1 && break
	kill -0 "$wpid" 2>/dev/null || die "SeaweedFS exited: $(tail -5 "$work/weed.log")"
	sleep 0.3
done
export AWS_ENDPOINT_URL_S3=$url AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=testsecret AWS_REGION=us-east-1 \
	AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null

log "copying $src into s3://bench/$CORPUS/"
(cd "$(dirname "$src")" && "$weed" filer.copy -c 16 "$CORPUS" "http://127.0.0.1:$fp/buckets/bench/") >"$work/copy.log" 2>&1 ||
	die "copy into SeaweedFS failed: $(tail -5 "$work/copy.log")"

# bytes PREFIX: the total size of the objects under s3://bench/PREFIX.
bytes() {
	python3 - "$url" "$1" <<'EOF'
import sys, urllib.parse, urllib.request, xml.etree.ElementTree as ET
url, prefix = sys.argv[1], sys.argv[2]
ns = "{http://s3.amazonaws.com/doc/2006-03-01/}"
total, n, token = 0, 0, None
while True:
    q = {"list-type": "2", "prefix": prefix}
    if token:
        q["continuation-token"] = token
    root = ET.fromstring(urllib.request.urlopen(url + "/bench?" + urllib.parse.urlencode(q)).read())
    for c in root.iter(ns + "Contents"):
        total += int(c.find(ns + "Size").text); n += 1
    token = root.findtext(ns + "NextContinuationToken")
    if root.findtext(ns + "IsTruncated") != "true" or not token:
        break
print(total, n)
EOF
}
read -r tree_bytes tree_objects < <(bytes "$CORPUS/")
local_bytes=$(find "$src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
[[ $tree_bytes == "$local_bytes" ]] || die "s3://bench/$CORPUS/ holds $tree_bytes bytes, $src $local_bytes"
log "s3://bench/$CORPUS/: $tree_objects objects, $tree_bytes bytes"

mk=("$BIN/mkdwarfs" -l "$LEVEL" --no-progress --log-level warn --force ${MKDWARFS_ARGS:-})
in=s3://bench/$CORPUS/
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# timed NAME CMD...: wall seconds of CMD, logged to $work/NAME.log.
timed() {
	local name=$1 s
	shift
	drop
	s=$(now_ns)
	"$@" >"$work/$name.log" 2>&1 || die "$name failed: $(tail -5 "$work/$name.log")"
	secs "$s" "$(now_ns)"
}

# The plan: how many bytes of the tree each shard reads.
"$BIN/mkdwarfs" -i "$in" --shard="$SHARDS" --shard-plan >"$work/plan.json" 2>"$work/plan.log" ||
	die "--shard-plan failed: $(tail -5 "$work/plan.log")"
mapfile -t plan_bytes < <(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
for s in sorted(p["shards"], key=lambda s: s["index"]):
    print(s["bytes"])' "$work/plan.json")
[[ ${#plan_bytes[@]} == "$SHARDS" ]] || die "the plan has ${#plan_bytes[@]} shards, want $SHARDS"

single() { timed "single-$1" "${mk[@]}" -i "$in" -o s3://bench/single.dwarfs; }
sharded() {
	local k t max=0 r=$1
	for ((k = 0; k < SHARDS; k++)); do
		t=$(timed "shard$k-$r" "${mk[@]}" -i "$in" --shard="$k/$SHARDS" -o "s3://bench/shards/shard-$k.dwarfs")
		echo "$t" >"$work/shard$k-$r.wall"
		max=$(awk -v a="$max" -v b="$t" 'BEGIN { print (b > a) ? b : a }')
	done
	t=$(timed "merge-$r" "$BIN/mkdwarfs" --merge "s3://bench/shards/shard-*.dwarfs" --merge-into-root \
		-o s3://bench/merged.dwarfs --no-progress --log-level info --force)
	echo "$max $t"
}

declare -a single_w shard_max merge_w
for ((r = 0; r < ROUNDS; r++)); do
	if ((r % 2 == 0)); then
		log "round $r: single build, then $SHARDS shards and the merge"
		single_w[r]=$(single "$r")
		read -r shard_max[r] merge_w[r] < <(sharded "$r")
	else
		log "round $r: $SHARDS shards and the merge, then the single build"
		read -r shard_max[r] merge_w[r] < <(sharded "$r")
		single_w[r]=$(single "$r")
	fi
	log "round $r: single ${single_w[r]} s, largest shard ${shard_max[r]} s, merge ${merge_w[r]} s"
done

single_bytes=$(bytes single.dwarfs | cut -d' ' -f1)
merged_bytes=$(bytes merged.dwarfs | cut -d' ' -f1)
declare -a shard_bytes
for ((k = 0; k < SHARDS; k++)); do shard_bytes[k]=$(bytes "shards/shard-$k.dwarfs" | cut -d' ' -f1); done
shards_total=$(printf '%s\n' "${shard_bytes[@]}" | awk '{ s += $1 } END { print s }')
fetched=$(sed -n 's/.*; fetched \([0-9][0-9]*\) bytes.*/\1/p; s/.*fetched \([0-9.]* [KMG]iB\) in \([0-9]*\) requests.*/\1 in \2 requests/p' "$work/merge-0.log" | tail -1)

if [[ ${CHECK:-1} == 1 ]]; then
	log "extracting the merged image"
	mkdir "$work/x"
	"$BIN/dwarfsextract" -i s3://bench/merged.dwarfs -o "$work/x"
	diff -r --no-dereference "$src" "$work/x" >/dev/null || die "the merged image extracts differently from $src"
	rm -rf "$work/x"
fi

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
declare -a wall_ratio
for ((r = 0; r < ROUNDS; r++)); do
	wall_ratio[r]=$(ratio "$(awk -v a="${shard_max[r]}" -v b="${merge_w[r]}" 'BEGIN { print a + b }')" "${single_w[r]}")
done

{
	echo "# Distributed build of $CORPUS: $SHARDS shards at -l $LEVEL, from and to S3 (SeaweedFS on loopback), one shard at a time"
	echo
	machine_note
	echo "- tree: $tree_objects objects, $tree_bytes bytes; $ROUNDS rounds, order alternated, page cache dropped before each build"
	echo
	echo "| build | wall s (per round) | image bytes | read from S3 | written to S3 |"
	echo "|---|---:|---:|---:|---:|"
	echo "| single | ${single_w[*]} | $single_bytes | $tree_bytes | $single_bytes |"
	for ((k = 0; k < SHARDS; k++)); do
		w=()
		for ((r = 0; r < ROUNDS; r++)); do w+=("$(cat "$work/shard$k-$r.wall")"); done
		echo "| shard $k | ${w[*]} | ${shard_bytes[k]} | ${plan_bytes[k]} | ${shard_bytes[k]} |"
	done
	echo "| merge | ${merge_w[*]} | $merged_bytes | ${fetched:-≤ $shards_total} | $merged_bytes |"
	echo
	echo "- largest shard + merge, per round: $(for ((r = 0; r < ROUNDS; r++)); do awk -v a="${shard_max[r]}" -v b="${merge_w[r]}" 'BEGIN { printf "%.3f ", a + b }'; done)s"
	echo "- (largest shard + merge) / single build wall: median $(median "${wall_ratio[@]}") (rounds: ${wall_ratio[*]})"
	echo "- merged / single image size: $(awk -v a="$merged_bytes" -v b="$single_bytes" 'BEGIN { printf "%.4f", a / b }')"
	echo "- bytes moved, sharded: $(awk -v a="$tree_bytes" -v b="$shards_total" -v c="$merged_bytes" 'BEGIN { printf "read %d (tree) + %d (shards, at most) = %d, written %d (shards) + %d (merged) = %d", a, b, a + b, b, c, b + c }')"
	echo "- bytes moved, single: read $tree_bytes, written $single_bytes"
} | tee "$report"
log "report: $report"
