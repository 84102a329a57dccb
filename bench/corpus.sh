#!/usr/bin/env bash
# Build (or reuse) the benchmark corpora under $BENCH_DIR/corpus:
#   xtools        8 consecutive golang.org/x/tools releases side by side
#   goroot        a copy of $(go env GOROOT)/src
# With QUICK=1: xtools-quick (2 releases) and goroot-quick (a few packages).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

XTOOLS_VERSIONS=${XTOOLS_VERSIONS:-"v0.20.0 v0.21.0 v0.22.0 v0.23.0 v0.24.0 v0.25.0 v0.26.0 v0.27.0"}
XTOOLS_QUICK_VERSIONS=${XTOOLS_QUICK_VERSIONS:-"v0.26.0 v0.27.0"}
GOROOT_QUICK_DIRS=${GOROOT_QUICK_DIRS:-"net crypto go"}

need go
need cp
mkdir -p "$BENCH_DIR/corpus"

make_xtools() { # name versions...
	local name=$1; shift
	local dest; dest=$(corpus_dir "$name")
	if [[ -f $dest.ready ]]; then log "corpus $name cached at $dest"; return; fi
	local scratch=$BENCH_DIR/modcache
	mkdir -p "$scratch"
	rm -rf "$dest" && mkdir -p "$dest"
	local v
	for v in "$@"; do
		if [[ ! -d $scratch/golang.org/x/tools@$v ]]; then
			log "downloading golang.org/x/tools@$v"
			# Run outside any module so the project's go.mod is not touched.
			(cd "$BENCH_DIR" && GOMODCACHE=$scratch GOFLAGS=-modcacherw GO111MODULE=on GOWORK=off \
				go mod download golang.org/x/tools@"$v") ||
				die "cannot download golang.org/x/tools@$v (check 'go list -m -versions golang.org/x/tools' and GOPROXY)"
		fi
		cp -a "$scratch/golang.org/x/tools@$v" "$dest/"
	done
	chmod -R u+w "$dest"
	touch "$dest.ready"
	log "corpus $name: $(du -sh "$dest" | cut -f1), $(find "$dest" -type f | wc -l) files"
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
	goroot) make_goroot goroot ;;
	goroot-quick) # shellcheck disable=SC2086
		make_goroot goroot-quick $GOROOT_QUICK_DIRS ;;
	*) die "unknown corpus $c" ;;
	esac
	echo "$(corpus_dir "$c")"
done
