#!/usr/bin/env bash
# Build (or reuse) the benchmark corpora under $BENCH_DIR/corpus:
#   xtools        8 consecutive golang.org/x/tools releases side by side
#   goroot        a copy of $(go env GOROOT)/src
#   xtools8       golang.org/x/tools v0.45.0..v0.52.0 (the bench-compare corpus)
#   redis         100 redis release tags 3.2.7..7.4.1 as `git archive` trees of
#                 a bare redis mirror named by REDIS_MIRROR (optional)
#   gomods        the stand-in for redis without a mirror: many releases of
#                 one Go module (GOMODS_MODULE, GOMODS_VERSIONS)
# With QUICK=1: xtools-quick (2 releases) and goroot-quick (a few packages).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

XTOOLS_VERSIONS=${XTOOLS_VERSIONS:-"v0.20.0 v0.21.0 v0.22.0 v0.23.0 v0.24.0 v0.25.0 v0.26.0 v0.27.0"}
XTOOLS_QUICK_VERSIONS=${XTOOLS_QUICK_VERSIONS:-"v0.26.0 v0.27.0"}
GOROOT_QUICK_DIRS=${GOROOT_QUICK_DIRS:-"net crypto go"}
XTOOLS8_VERSIONS=${XTOOLS8_VERSIONS:-"v0.45.0 v0.46.0 v0.47.0 v0.48.0 v0.49.0 v0.50.0 v0.51.0 v0.52.0"}
REDIS_FIRST=${REDIS_FIRST:-3.2.7}
REDIS_LAST=${REDIS_LAST:-7.4.1}
GOMODS_MODULE=${GOMODS_MODULE:-golang.org/x/net}
GOMODS_VERSIONS=${GOMODS_VERSIONS:-"$(seq -f 'v0.%g.0' 20 49 | tr '\n' ' ')"}

need go
need cp
mkdir -p "$BENCH_DIR/corpus"

make_xtools() { # name versions...
	local name=$1; shift
	make_gomod "$name" golang.org/x/tools "$@"
}

make_gomod() { # name module versions...
	local name=$1 mod=$2; shift 2
	local dest; dest=$(corpus_dir "$name")
	if [[ -f $dest.ready ]]; then log "corpus $name cached at $dest"; return; fi
	local scratch=$BENCH_DIR/modcache
	mkdir -p "$scratch"
	rm -rf "$dest" && mkdir -p "$dest"
	local v
	for v in "$@"; do
		if [[ ! -d $scratch/$mod@$v ]]; then
			log "downloading $mod@$v"
			# Run outside any module so the project's go.mod is not touched.
			(cd "$BENCH_DIR" && GOMODCACHE=$scratch GOFLAGS=-modcacherw GO111MODULE=on GOWORK=off \
				go mod download "$mod@$v") ||
				die "cannot download $mod@$v (check 'go list -m -versions $mod' and GOPROXY)"
		fi
		cp -a "$scratch/$mod@$v" "$dest/"
	done
	chmod -R u+w "$dest"
	touch "$dest.ready"
	log "corpus $name: $(du -sh "$dest" | cut -f1), $(find "$dest" -type f | wc -l) files"
}

# make_redis: the release tags REDIS_FIRST..REDIS_LAST (no release
# candidates) of the bare git mirror REDIS_MIRROR, one directory per tag.
make_redis() {
	local dest; dest=$(corpus_dir redis)
	if [[ -f $dest.ready ]]; then log "corpus redis cached at $dest"; return; fi
	[[ -n ${REDIS_MIRROR:-} ]] || die "corpus redis needs REDIS_MIRROR (a git mirror of redis)"
	need git
	local tags
	tags=$(git --git-dir="$REDIS_MIRROR" tag | grep -E '^[0-9]+\.[0-9]+\.[0-9]+$' | sort -V |
		awk -v a="$REDIS_FIRST" -v b="$REDIS_LAST" '$0 == a {on = 1} on {print} $0 == b {exit}')
	[[ -n $tags ]] || die "no tags $REDIS_FIRST..$REDIS_LAST in $REDIS_MIRROR"
	rm -rf "$dest" && mkdir -p "$dest"
	local t
	for t in $tags; do
		mkdir "$dest/redis-$t"
		git --git-dir="$REDIS_MIRROR" archive "$t" | tar -x -C "$dest/redis-$t" || die "git archive $t failed"
	done
	touch "$dest.ready"
	log "corpus redis: $(echo "$tags" | wc -l) tags, $(du -sh "$dest" | cut -f1), $(find "$dest" -type f | wc -l) files"
}

make_goroot() { # name [subdirs...]
	local name=$1; shift
	local dest; dest=$(corpus_dir "$name")
	if [[ -f $dest.ready ]]; then log "corpus $name cached at $dest"; return; fi
	local src; src="$(go env GOROOT)/src"
	[[ -d $src ]] || die "GOROOT source tree $src not found"
	rm -rf "$dest" && mkdir -p "$dest"
	if [[ $# -eq 0 ]]; then
		cp -a "$src/." "$dest/"
	else
		local d
		for d in "$@"; do cp -a "$src/$d" "$dest/"; done
	fi
	chmod -R u+w "$dest"
	echo "$(go env GOVERSION)" >"$dest.version"
	touch "$dest.ready"
	log "corpus $name: $(du -sh "$dest" | cut -f1), $(find "$dest" -type f | wc -l) files"
}

for c in $(corpora); do
	case $c in
	xtools) # shellcheck disable=SC2086
		make_xtools xtools $XTOOLS_VERSIONS ;;
	xtools-quick) # shellcheck disable=SC2086
		make_xtools xtools-quick $XTOOLS_QUICK_VERSIONS ;;
	xtools8) # shellcheck disable=SC2086
		make_xtools xtools8 $XTOOLS8_VERSIONS ;;
	redis) make_redis ;;
	gomods) # shellcheck disable=SC2086
		make_gomod gomods "$GOMODS_MODULE" $GOMODS_VERSIONS ;;
	goroot) make_goroot goroot ;;
	goroot-quick) # shellcheck disable=SC2086
		make_goroot goroot-quick $GOROOT_QUICK_DIRS ;;
	*) die "unknown corpus $c" ;;
	esac
	echo "$(corpus_dir "$c")"
done
