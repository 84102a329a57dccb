#!/bin/bash
# Submits a sharded mkdwarfs build to Slurm: an array job of N shard builds
# (shard.sbatch), then the merge (merge.sbatch) as a job that starts only
# when every shard task succeeded. If a shard fails, the merge is cancelled
# and nothing is written at OUTPUT.
#
#   submit.sh [-n N] INPUT SHARDS OUTPUT [-- MKDWARFS-OPTIONS...]
#
#   -n N     number of shards (default 4)
#   INPUT    the tree: a directory every node sees, or s3://bucket/prefix/
#   SHARDS   where the shard images go: a directory every node sees, or
#            s3://bucket/prefix/ (shard K is SHARDS/shard-K.dwarfs)
#   OUTPUT   the merged image: a path, or s3://bucket/key
#   MKDWARFS-OPTIONS  for the shard builds (-l 7, -S 24, ...)
#
# Environment:
#   MKDWARFS        mkdwarfs on the nodes (default: mkdwarfs on their PATH)
#   MERGE_OPTIONS   more options for the merge (word-split)
#   SBATCH_OPTIONS  more sbatch options for both jobs (word-split), such as
#                   --partition=P --account=A --time=2:00:00 --cpus-per-task=16
#   LOG_DIR         where the jobs' output goes (default: the current directory)
#   AWS_*           S3 credentials, region and endpoint; the jobs get this
#                   environment (--export=ALL)
#
# Prints "array=ID merge=ID" on success; follow the jobs with squeue or
# scontrol show job ID.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() {
	sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0" >&2
	exit 2
}
n=4
while getopts n:h opt; do
	case $opt in
	n) n=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -ge 3 ]] || usage
input=$1 shards=$2 output=$3
shift 3
if [[ $# -gt 0 ]]; then
	[[ $1 == -- ]] || usage
	shift
fi
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: -n $n: the number of shards must be a positive integer" >&2; exit 2; }
logs=${LOG_DIR:-$PWD}
mkdir -p "$logs"
# shellcheck disable=SC2206 # word splitting wanted
extra=(${SBATCH_OPTIONS:-})
# shellcheck disable=SC2206
merge_opts=(${MERGE_OPTIONS:-})

array=$(sbatch --parsable --export=ALL "${extra[@]}" --array="0-$((n - 1))" \
	--output="$logs/dwarfs-shard-%A_%a.out" \
	"$here/shard.sbatch" "$input" "$shards" "$n" "$@")
array=${array%%;*}
# afterok on the array job waits for every task; --kill-on-invalid-dep
# cancels the merge at once when one fails, instead of leaving it pending.
merge=$(sbatch --parsable --export=ALL "${extra[@]}" \
	--dependency="afterok:$array" --kill-on-invalid-dep=yes \
	--output="$logs/dwarfs-merge-%j.out" \
	"$here/merge.sbatch" "$shards" "$output" "${merge_opts[@]}") || {
	scancel "$array" 2>/dev/null || true
	echo "submit.sh: the merge job was not accepted; the shard jobs ($array) were cancelled" >&2
	exit 1
}
merge=${merge%%;*}
echo "array=$array merge=$merge"
