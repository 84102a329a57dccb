#!/usr/bin/env bash
# make check-codecs: the zstd and lzma options of the reference (negative
# zstd levels; lzma mode, mf, nice, depth and binary= BCJ filters) on a
# tree of real executables, with both mkdwarfs in the same run. Every image
# of ours is checked with the reference dwarfsck --check-integrity and
# extracted by the reference dwarfsextract; every reference image is
# checked and extracted by ours; extracted trees are compared with the
# source. Prints image sizes and build times side by side as ratios.
#
#   REF_DWARFS  directory with the reference mkdwarfs, dwarfsck and
#               dwarfsextract (without it the check prints "skipped")
#   BIN         godwarfs binaries (default <repo>/bin; built if missing)
#   EXE_SRC     tree of executables (default: ELF files from /usr/bin and
#               /usr/lib, copied up to EXE_MB MiB, default 48)
#   CASES       subset of case names to run
set -uo pipefail
. "$(dirname "$0")/lib.sh"

if [[ -z ${REF_DWARFS:-} ]]; then
	echo "skipped: reference tools not installed (set REF_DWARFS to the directory holding the reference mkdwarfs, dwarfsck and dwarfsextract)"
	exit 0
fi
for t in mkdwarfs dwarfsck dwarfsextract; do
	[[ -x $REF_DWARFS/$t ]] || { echo "skipped: reference tools not installed ($REF_DWARFS/$t missing)"; exit 0; }
done
ensure_bin mkdwarfs dwarfsck dwarfsextract
need python3

WORK=$(mktemp -d "${TMPDIR:-/tmp}/godwarfs-codecs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The pure-Go encoders, for the static build's column.
STATIC=$WORK/static
if command -v go >/dev/null && (cd "$REPO_ROOT" && CGO_ENABLED=0 go build -o "$STATIC/" ./cmd/mkdwarfs) 2>/dev/null; then
	:
else
	STATIC=""
	log "no static build (needs go); its column is left out"
fi

SRC=${EXE_SRC:-}
if [[ -z $SRC ]]; then
	SRC=$WORK/exe
	mkdir -p "$SRC"
	# ELF files of /usr/bin, then /usr/lib, in name order, up to the budget.
	total=$(python3 - "$SRC" "${EXE_MB:-48}" <<'PY'
import os, shutil, sys
dst, budget = sys.argv[1], int(sys.argv[2]) << 20
total = 0
for top in ("/usr/bin", "/usr/lib"):
    for root, dirs, files in os.walk(top):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            try:
                if os.path.islink(p) or not os.path.isfile(p):
                    continue
                size = os.path.getsize(p)
                if total + size > budget or size > 8 << 20:
                    continue
                with open(p, "rb") as fh:
                    if fh.read(4) != b"\x7fELF":
                        continue
                os.makedirs(os.path.join(dst, root.lstrip("/")), exist_ok=True)
                shutil.copy2(p, os.path.join(dst, p.lstrip("/")))
                total += size
            except OSError:
                pass
print(total)
PY
)
	log "executables tree: $(find "$SRC" -type f | wc -l) files, $(mib "$total") MiB"
fi

# CASE lines: name | -C spec
read -r -d '' MATRIX <<'LIST'
lzma9|lzma:level=9
lzma9-x86|lzma:level=9:binary=x86
lzma6-arm|lzma:level=6:binary=arm
lzma6-opts|lzma:level=6:mode=fast:mf=hc4:nice=32:depth=16
zstd-5|zstd:level=-5
zstd1|zstd:level=1
LIST

pass=0 fail=0
declare -a ROWS
checked() { # checked DESC CMD...: run quietly, log on failure
	local desc=$1; shift
	if "$@" >"$WORK/out" 2>&1; then return 0; fi
	log "$desc failed:"; head -5 "$WORK/out" >&2; return 1
}
same_tree() { diff -r --no-dereference "$SRC" "$1" >"$WORK/diff" 2>&1 || { head -5 "$WORK/diff" >&2; return 1; }; }

# build TOOLDIR IMG SPEC: prints the seconds taken
build() {
	local t0 t1
	t0=$(now_ns)
	"$1/mkdwarfs" -i "$SRC" -o "$2" -C "$3" --no-progress >"$WORK/out" 2>&1 || return 1
	t1=$(now_ns)
	secs "$t0" "$t1"
}

# verify READER_DIR IMG: check and extract IMG with the other side's tools
verify() {
	checked "$2: dwarfsck --check-integrity ($1)" "$1/dwarfsck" --check-integrity "$2" || return 1
	rm -rf "$WORK/x" && mkdir "$WORK/x"
	checked "$2: dwarfsextract ($1)" "$1/dwarfsextract" -i "$2" -o "$WORK/x" || return 1
	same_tree "$WORK/x" || { log "$2: extracted tree differs"; return 1; }
}

while IFS='|' read -r name spec; do
	[[ -z $name ]] && continue
	if [[ -n ${CASES:-} && " $CASES " != *" $name "* ]]; then continue; fi
	row=("$name" "$spec")
	ok=1
	for side in ours ref static; do
		case $side in
		ours) mk=$BIN; reader=$REF_DWARFS ;;
		ref) mk=$REF_DWARFS; reader=$BIN ;;
		static) [[ -n $STATIC ]] || { row+=("-" "-"); continue; }; mk=$STATIC; reader=$REF_DWARFS ;;
		esac
		img=$WORK/$name-$side.dwarfs
		if ! t=$(build "$mk" "$img" "$spec"); then
			if [[ $side == static ]] && grep -q 'needs the liblzma encoder' "$WORK/out"; then
				row+=("refused" "-"); continue # documented: pure-Go lzma has no mode/mf/nice/depth
			fi
			log "$name: $side mkdwarfs failed"; head -5 "$WORK/out" >&2
			row+=("failed" "-"); ok=0; continue
		fi
		sz=$(stat -c %s "$img")
		verify "$reader" "$img" || { ok=0; sz="$sz (check FAILED)"; }
		row+=("$sz" "$t")
		declare "size_$side=${sz%% *}" "time_$side=$t"
		rm -f "$img"
	done
	row+=("$(ratio "${size_ours:-}" "${size_ref:-}")" "$(ratio "${time_ours:-}" "${time_ref:-}")")
	ROWS+=("$(IFS='|'; echo "${row[*]}")")
	if [[ $ok == 1 ]]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
	unset size_ours size_ref time_ours time_ref
done <<<"$MATRIX"

echo
echo "Tree: $(find "$SRC" -type f | wc -l) executables, $(mib "$(du -sb "$SRC" | cut -f1)") MiB; $(nproc) CPUs"
echo
echo "| case | -C | ours bytes | ours s | ref bytes | ref s | static bytes | static s | size ours/ref | time ours/ref |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for row in "${ROWS[@]}"; do echo "|${row//|/ | }|"; done
echo
echo "$pass passed, $fail failed (ours and static checked by the reference tools, the reference's by ours)"
[[ $fail == 0 ]]
