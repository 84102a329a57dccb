# shellcheck shell=bash
# Common helpers for the godwarfs benchmark scripts. Sourced, not run.

BENCH_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$BENCH_SRC/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/var/tmp/godwarfs-bench}
BIN=${BIN:-$REPO_ROOT/bin}
QUICK=${QUICK:-0}

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# need CMD [hint]: fail if CMD is not on PATH (or not an executable path).
need() {
	if [[ $1 == */* ]]; then
		[[ -x $1 ]] || die "missing tool: $1${2:+ ($2)}"
	else
		command -v "$1" >/dev/null 2>&1 || die "missing tool: $1${2:+ ($2)}"
	fi
}

need_root() { [[ $(id -u) -eq 0 ]] || die "$1 needs root"; }

# ensure_bin NAME...: make sure $BIN/NAME exists for each; build the missing ./cmd/NAME.
ensure_bin() {
	local b pkgs=()
	for b in "$@"; do [[ -x $BIN/$b ]] || pkgs+=("./cmd/$b"); done
	if [[ ${#pkgs[@]} -gt 0 ]]; then
		need go "Go toolchain needed to build ${pkgs[*]}"
		log "building ${pkgs[*]} into $BIN"
		mkdir -p "$BIN"
		(cd "$REPO_ROOT" && go build -o "$BIN/" "${pkgs[@]}") || die "go build ${pkgs[*]} failed"
	fi
	for b in "$@"; do [[ -x $BIN/$b ]] || die "missing $BIN/$b after build"; done
}

# Corpus names used by this run (CORPORA overrides).
corpora() {
	if [[ -n ${CORPORA:-} ]]; then
		echo "$CORPORA"
	elif [[ $QUICK == 1 ]]; then
		echo "xtools-quick goroot-quick"
	else
		echo "xtools goroot"
	fi
}

corpus_dir() { echo "$BENCH_DIR/corpus/$1"; }

# Fail unless corpus.sh has produced $1.
check_corpus() {
	[[ -f $BENCH_DIR/corpus/$1.ready ]] || die "corpus $1 missing in $BENCH_DIR/corpus (run bench/corpus.sh${QUICK:+ with QUICK=$QUICK})"
}

now_ns() { date +%s%N; }
# secs START_NS END_NS -> seconds with 3 decimals
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
# ratio A B -> A/B with 2 decimals, or "n/a"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "n/a" || b == "n/a" || b + 0 == 0) print "n/a"; else printf "%.2f", a / b }'; }
mib() { awk -v a="$1" 'BEGIN { if (a == "" || a == "n/a") print "n/a"; else printf "%.1f", a / 1048576 }'; }

machine_note() {
	echo "- host: $(uname -srm), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo) RAM"
	echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
}
