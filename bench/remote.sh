#!/usr/bin/env bash
# make bench-remote: time to first byte and full-read throughput of an
# image mounted from loopback S3 (SeaweedFS), without and with a warm disk
# cache, beside the same image mounted from a local file.
#
#   BENCH_DIR       cache and output directory (default /var/tmp/godwarfs-bench)
#   BIN             directory with godwarfs binaries (default <repo>/bin; built if missing)
#   QUICK=1         small corpus
#   CORPORA         corpus to build the image from (default xtools, or xtools-quick with QUICK=1)
#   REMOTE_WORKERS  parallel range requests (default 4)
#   RUNS            runs per mount kind; medians are reported (default 3)
#   REMOTE_IMAGE    use this image instead of building one from CORPORA
# Needs root (FUSE) and the SeaweedFS binary (scripts/install-weed.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [[ $QUICK == 1 ]]; then CORPORA=${CORPORA:-xtools-quick}; else CORPORA=${CORPORA:-xtools}; fi
export CORPORA
need_root "remote.sh"
ensure_bin dwarfs mkdwarfs
[[ -e /dev/fuse ]] || die "/dev/fuse missing"
"$REPO_ROOT/scripts/install-weed.sh" >/dev/null || die "cannot build SeaweedFS"
img=${REMOTE_IMAGE:-}
if [[ -z $img ]]; then
	"$(dirname "$0")/corpus.sh"
	c=${CORPORA%% *}
	check_corpus "$c"
	img=$BENCH_DIR/remote-$c.dwarfs
	if [[ ! -f $img ]]; then
		log "building $img"
		"$BIN/mkdwarfs" -i "$(corpus_dir "$c")" -o "$img.tmp" --log-level warn
		mv "$img.tmp" "$img"
	fi
fi
[[ -f $img ]] || die "no image $img"
mkdir -p "$BENCH_DIR/results"
report=$BENCH_DIR/results/remote-$(date -u +%Y%m%dT%H%M%SZ).md
cd "$REPO_ROOT"
GODWARFS_BENCH_REMOTE_IMAGE=$img BIN=$BIN RUNS=${RUNS:-3} BENCH_REPORT=$report GODWARFS_REQUIRE_REMOTE=1 \
	go test -tags benchremote -count=1 -timeout 60m -run '^TestBenchRemote$' -v ./bench/remote/ | grep -v '^=== RUN'
log "report: $report"
