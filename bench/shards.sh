#!/usr/bin/env bash
# make bench-shards: a tree built as N shards, each in its own mkdwarfs
# process (as if on its own machine), uploaded to a loopback S3 server
# (SeaweedFS) and merged straight from their s3:// URLs, blocks copied as
# they are (only blocks that hold files of a size two shards have are also
# decoded, to find identical files; MERGE_ARGS=--no-merge-dedup decodes
# none); beside a single build of the whole tree. Reports the bytes the
# merge fetched, wall times and sizes, and checks the merged image
# (dwarfsck --check-integrity, dwarfsextract compared with the source).
#
#   BENCH_DIR  cache and output directory (default /var/tmp/godwarfs-bench)
#   BIN        godwarfs binaries (default <repo>/bin; built if missing)
#   CORPUS     a corpus with one top-level directory per project (default
#              cdnjs-small; bench/corpus.sh makes it)
#   SHARDS     number of shards (default 4), or "top": one shard per
#              top-level directory
#   LEVEL      mkdwarfs -l for the shards and the single build (default 7)
#   PAR        shard builds run at once (default 1: this machine's cores
#              are shared; on N machines the shards' wall is the longest)
#   CHECK=0    skip extracting the merged image
#   S3=0       merge from the local shard files instead (no SeaweedFS)
#   MERGE_ARGS more mkdwarfs options for the merge
#   BASELINE=1 also build the whole tree with --order=nilsimsa:families=0
#              (the whole-tree order, as the reference has it; levels 6 to 9,
#              which order by nilsimsa)
# Needs the SeaweedFS binary (scripts/install-weed.sh) unless S3=0.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CORPUS=${CORPUS:-cdnjs-small}
SHARDS=${SHARDS:-4}
LEVEL=${LEVEL:-7}
PAR=${PAR:-1}
check_corpus "$CORPUS"
ensure_bin mkdwarfs dwarfsck dwarfsextract
S3=${S3:-1}
if [[ $S3 == 1 ]]; then
	weed=$("$REPO_ROOT/scripts/install-weed.sh") || die "cannot build SeaweedFS"
	need curl
fi
src=$(corpus_dir "$CORPUS")
work=$BENCH_DIR/shards-$CORPUS
rm -rf "$work"
mkdir -p "$work" "$BENCH_DIR/results"
report=$BENCH_DIR/results/shards-$(date -u +%Y%m%dT%H%M%SZ).md

# Shard by top-level directory, largest first into the smallest shard, so
# that no project's releases are split: a merge copies blocks as they are
# and cannot find redundancy between shards.
mapfile -t tops < <(cd "$src" && du -s -- * | sort -k1,1nr -k2 | cut -f2-)
[[ $SHARDS == top ]] && SHARDS=${#tops[@]}
declare -a load
for ((k = 0; k < SHARDS; k++)); do load[k]=0; mkdir -p "$work/shard$k"; done
for d in "${tops[@]}"; do
	best=0
	for ((k = 1; k < SHARDS; k++)); do ((load[k] < load[best])) && best=$k; done
	cp -al "$src/$d" "$work/shard$best/$d" 2>/dev/null || cp -a "$src/$d" "$work/shard$best/$d"
	load[best]=$((load[best] + $(du -s "$src/$d" | cut -f1)))
done
mk=("$BIN/mkdwarfs" -l "$LEVEL" --no-progress --log-level warn -N 2)
t() { local s; s=$(now_ns); "$@"; secs "$s" "$(now_ns)"; }

log "building $SHARDS shards of $CORPUS at -l $LEVEL ($PAR at once)"
for ((k = 0; k < SHARDS; k++)); do
	echo "k=$k; s=\$(date +%s%N); \"\$@\" -i '$work/shard$k' -o '$work/shard$k.dwarfs' && echo \$k \$(( (\$(date +%s%N) - s) / 1000000 ))"
done >"$work/jobs"
shard_ms=$(xargs -d '\n' -P "$PAR" -I{} bash -c '{}' _ "${mk[@]}" <"$work/jobs" | sort -n | tee "$work/shard-times" | awk '{ s += $2; if ($2 > m) m = $2 } END { printf "%d %d", s, m }')
shard_sum=$(awk -v v="${shard_ms% *}" 'BEGIN { printf "%.3f", v / 1000 }')
shard_max=$(awk -v v="${shard_ms#* }" 'BEGIN { printf "%.3f", v / 1000 }')
shard_bytes=0
for ((k = 0; k < SHARDS; k++)); do shard_bytes=$((shard_bytes + $(stat -c %s "$work/shard$k.dwarfs"))); done

inputs=()
if [[ $S3 == 1 ]]; then
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
		curl -fs -X PUT "$url/godwarfs-shards" >/dev/null 2>&1 && break
		kill -0 "$wpid" 2>/dev/null || die "SeaweedFS exited: $(tail -5 "$work/weed.log")"
		sleep 0.3
	done
	for ((k = 0; k < SHARDS; k++)); do
		curl -fsS -T "$work/shard$k.dwarfs" "$url/godwarfs-shards/shard$k.dwarfs" >/dev/null || die "upload of shard $k failed"
		inputs+=("s3://godwarfs-shards/shard$k.dwarfs")
	done
	export AWS_ENDPOINT_URL_S3=$url AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=testsecret AWS_REGION=us-east-1 \
		AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
else
	for ((k = 0; k < SHARDS; k++)); do inputs+=("$work/shard$k.dwarfs"); done
fi
log "merging ${inputs[*]}"
s=$(now_ns)
# shellcheck disable=SC2086
"$BIN/mkdwarfs" --merge "${inputs[@]}" --merge-into-root ${MERGE_ARGS:-} -o "$work/merged.dwarfs" --no-progress --log-level info 2>"$work/merge.log"
merge_s=$(secs "$s" "$(now_ns)")
fetched=$(sed -n 's/.*; fetched \(.*\) in \([0-9]*\) requests.*/\1 in \2 requests/p' "$work/merge.log")
merged_bytes=$(stat -c %s "$work/merged.dwarfs")
"$BIN/dwarfsck" --check-integrity "$work/merged.dwarfs" >/dev/null || die "merged image fails the integrity check"
if [[ ${CHECK:-1} == 1 ]]; then
	mkdir "$work/x"
	"$BIN/dwarfsextract" -i "$work/merged.dwarfs" -o "$work/x"
	diff -r --no-dereference "$src" "$work/x" >/dev/null || die "the merged image extracts differently from $src"
	rm -rf "$work/x"
fi

log "single build of $CORPUS"
single_s=$(t "${mk[@]}" -i "$src" -o "$work/single.dwarfs")
single_bytes=$(stat -c %s "$work/single.dwarfs")
if [[ ${BASELINE:-0} == 1 && $LEVEL -lt 6 ]]; then
	# Levels below 6 order by path or similarity: families do not apply.
	log "no whole-tree baseline: -l $LEVEL does not order by nilsimsa"
	BASELINE=0
fi
if [[ ${BASELINE:-0} == 1 ]]; then
	log "single build of $CORPUS in the whole-tree order"
	base_s=$(t "${mk[@]}" --order=nilsimsa:families=0 -i "$src" -o "$work/single-families0.dwarfs")
	base_bytes=$(stat -c %s "$work/single-families0.dwarfs")
fi

{
	echo "# Sharded build of $CORPUS: $SHARDS shards at -l $LEVEL, merged from $([[ $S3 == 1 ]] && echo S3 || echo local files)${MERGE_ARGS:+ with $MERGE_ARGS}"
	echo
	echo "| | wall s | bytes |"
	echo "|---|---:|---:|"
	echo "| shard builds (sum; longest $shard_max s) | $shard_sum | $shard_bytes |"
	if [[ $S3 == 1 ]]; then
		echo "| merge from s3:// (fetched $fetched) | $merge_s | $merged_bytes |"
	else
		echo "| merge from local files | $merge_s | $merged_bytes |"
	fi
	echo "| single build | $single_s | $single_bytes |"
	[[ ${BASELINE:-0} == 1 ]] && echo "| single build, --order=nilsimsa:families=0 | $base_s | $base_bytes |"
	echo
	echo "merge wall / single build wall: $(ratio "$merge_s" "$single_s")"
	echo "merged size / shards' total: $(ratio "$merged_bytes" "$shard_bytes"); merged size / single build: $(ratio "$merged_bytes" "$single_bytes")"
	echo "single build / merged shards: $(ratio "$single_bytes" "$merged_bytes")"
	[[ ${BASELINE:-0} == 1 ]] && echo "single build / whole-tree order: $(ratio "$single_bytes" "$base_bytes")"
	echo "wall on $SHARDS machines (longest shard + merge) / single build: $(ratio "$(awk -v a="$shard_max" -v b="$merge_s" 'BEGIN { print a + b }')" "$single_s")"
} | tee "$report"
log "report: $report"
