#!/usr/bin/env bash
# make bench-order: for each corpus in CORPORA (default: cdnjs-small xtools
# goroot), the single build beside the same tree built as one shard per
# top-level directory and merged with --merge (bench/shards.sh with
# SHARDS=top S3=0 BASELINE=1), and beside the single build in the
# whole-tree order (--order=nilsimsa:families=0). The ordering keeps
# unrelated top-level directories apart (see doc/architecture.md,
# Ordering): the single build should be no larger than the merged shards.
#
#   CORPORA, LEVEL, BIN, BENCH_DIR as for bench/shards.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CORPORA=${CORPORA:-"cdnjs-small xtools goroot"}
for c in $CORPORA; do
	CORPUS=$c SHARDS=top S3=0 CHECK=${CHECK:-0} BASELINE=1 "$(dirname "$0")/shards.sh"
done
