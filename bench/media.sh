#!/usr/bin/env bash
# make bench-media: the categorizers and their codecs (FLAC, RICEPP) beside
# the reference tools, on a media tree made here: PCM audio in WAV, WAV64,
# AIFF and CAF at 8-32 bits and 1-6 channels (bench/genmedia), FITS images
# at 8, 16 and 32 bits (testdata/fixtures/codecs/ricepp/genfits.go -big), ELF, PE and
# Mach-O executables (this repository's bench/statall built for several
# platforms, and a few from /usr/bin) and text from /usr/share/doc.
#
#  1. reading: the reference mkdwarfs builds the tree with --categorize
#     (its default list) and with each categorizer alone, at -l1, -l7 and
#     -l9; each image must extract with the godwarfs dwarfsextract and read
#     through the godwarfs driver exactly as the tree;
#  2. writing: --categorize -l7 with godwarfs (cgo build), godwarfs
#     (CGO_ENABLED=0 build) and the reference, RUNS builds each in rotated
#     order: size, wall, CPU, peak RSS; every godwarfs image must pass the
#     reference dwarfsck --check-integrity and extract with the reference
#     dwarfsextract exactly;
#  3. reading speed: a full dwarfsextract of the reference's -l7 image by
#     both tools, to a directory and as a tar to /dev/null (cold page
#     cache, alternated);
#  4. a 1 GiB WAV (BIGWAV_SIZE): built by both tools (alternated), then the
#     reference's image read through both drivers with bench/readmem.sh.
#
#   REF_DWARFS   directory of the reference tools (without it: skipped)
#   RUNS         builds and extractions per tool (default 3)
#   STEPS        subset of "read write speed bigwav" (default all)
set -uo pipefail
. "$(dirname "$0")/lib.sh"

if [[ -z ${REF_DWARFS:-} || ! -x ${REF_DWARFS:-}/mkdwarfs ]]; then
	echo "skipped: reference tools not installed (set REF_DWARFS to the directory holding the reference mkdwarfs, dwarfsck, dwarfsextract and dwarfs)"
	exit 0
fi
need_root "media.sh"
need /usr/bin/time "apt-get install time"
ensure_bin mkdwarfs dwarfsck dwarfsextract dwarfs
RUNS=${RUNS:-3}
STEPS=${STEPS:-read write speed bigwav}
BIGWAV_SIZE=${BIGWAV_SIZE:-1073741824}
step() { [[ " $STEPS " == *" $1 "* ]]; }

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/godwarfs-media.XXXXXX")
MNT=$WORK/mnt
mkdir -p "$MNT"
trap 'umount "$MNT" 2>/dev/null; rm -rf "$WORK"' EXIT

make_media() { # the media tree, made once
	local dir=$BENCH_DIR/corpus/media f n=0
	[[ -f $dir.ready ]] && { echo "$dir"; return; }
	log "making the media tree in $dir"
	rm -rf "$dir" && mkdir -p "$dir"/{bin,fits,text}
	(cd "$REPO_ROOT" && go run ./bench/genmedia -seconds 4 "$dir/audio" &&
		go run testdata/fixtures/codecs/ricepp/genfits.go -big "$dir/fits") >&2 || die "generating media failed"
	for p in linux/amd64 linux/arm64 linux/s390x linux/386 windows/amd64 windows/arm64 darwin/arm64 darwin/amd64; do
		(cd "$REPO_ROOT" && CGO_ENABLED=0 GOOS=${p%/*} GOARCH=${p#*/} go build -o "$dir/bin/statall-${p/\//-}" ./bench/statall) ||
			die "building statall for $p failed"
	done
	for f in /usr/bin/{bash,gzip,tar,xz,make,perl,python3}; do
		[[ -f $f ]] && cp -L "$f" "$dir/bin/" && n=$((n + 1))
	done
	cp -a /usr/share/doc/[a-c]* "$dir/text/" 2>/dev/null
	find "$dir/text" -type l -delete
	touch "$dir.ready"
	echo "$dir"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio3() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
cold() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# pair_order R: the two tools in the order of round R (alternating).
pair_order() { if (($1 % 2)); then echo reference godwarfs; else echo godwarfs reference; fi; }

# timed_build MKDWARFS SRC OUT: a --categorize -l7 build from a cold page
# cache; prints "wall_s cpu_s peak_rss_kib".
timed_build() {
	cold
	/usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$1" -i "$2" -o "$3" --categorize -l7 -f --no-progress --log-level=error ||
		return 1
	awk '{ print $1, $2 + $3, $4 }' "$WORK/time"
}

# mounted_same IMAGE TREE: the godwarfs driver shows TREE.
mounted_same() {
	local pid i ok=0
	"$BIN/dwarfs" "$1" "$MNT" -f >/dev/null 2>&1 &
	pid=$!
	for ((i = 0; i < 200; i++)); do mountpoint -q "$MNT" && break; sleep 0.05; done
	diff -r --no-dereference "$2" "$MNT" >/dev/null && ok=1
	umount "$MNT"
	wait "$pid"
	((ok))
}

SRC=$(make_media)
echo "# Categorizers beside the reference $("$REF_DWARFS/mkdwarfs" --help 2>&1 | grep -m1 -oE 'v[0-9]+\.[0-9]+\.[0-9]+')"
echo
machine_note
echo "- media tree: $(du -sb "$SRC" | cut -f1) bytes, $(find "$SRC" -type f | wc -l) files ($(find "$SRC/audio" -type f | wc -l) audio, $(find "$SRC/fits" -type f | wc -l) FITS, $(find "$SRC/bin" -type f | wc -l) executables)"

if step read; then
	echo
	echo "## Reference images read by godwarfs"
	echo
	echo "| --categorize | level | image bytes | blocks by compression | dwarfsextract | mount |"
	echo "|---|---|---:|---|---|---|"
	for cat in default fits pcmaudio binary incompressible; do
		for l in 1 7 9; do
			img=$WORK/ref-$cat-l$l.dwarfs
			arg=--categorize
			[[ $cat != default ]] && arg=--categorize=$cat
			"$REF_DWARFS/mkdwarfs" -i "$SRC" -o "$img" "$arg" -l "$l" --no-progress --log-level=error ||
				die "reference mkdwarfs $arg -l$l failed"
			comp=$("$BIN/dwarfsck" -d 3 "$img" 2>/dev/null | awk '$2 == "BLOCK" { sub(/,$/, "", $3); c[$3]++ }
				END { for (k in c) printf "%s%s %d", (n++ ? ", " : ""), k, c[k] }')
			rm -rf "$WORK/x" && mkdir "$WORK/x"
			ex=FAILED
			"$BIN/dwarfsextract" -i "$img" -o "$WORK/x" 2>"$WORK/err" && diff -r --no-dereference "$SRC" "$WORK/x" >/dev/null && ex=same
			mt=FAILED
			mounted_same "$img" "$SRC" && mt=same
			echo "| $arg | -l$l | $(stat -c %s "$img") | ${comp:-?} | $ex | $mt |"
			[[ $ex == same && $mt == same ]] || { cat "$WORK/err" >&2; FAILED=1; }
			[[ $l == 7 && $cat == default ]] || rm -f "$img"
		done
	done
fi

if step write; then
	STATIC=$WORK/static
	(cd "$REPO_ROOT" && CGO_ENABLED=0 go build -o "$STATIC/" ./cmd/mkdwarfs) || die "static build failed"
	tools=(godwarfs static reference)
	declare -A WALL CPU RSS SIZE
	for ((r = 0; r < RUNS; r++)); do
		for ((k = 0; k < 3; k++)); do
			t=${tools[$(((r + k) % 3))]}
			case $t in
			godwarfs) mk=$BIN/mkdwarfs ;;
			static) mk=$STATIC/mkdwarfs ;;
			reference) mk=$REF_DWARFS/mkdwarfs ;;
			esac
			img=$WORK/w-$t.dwarfs
			read -r e c m < <(timed_build "$mk" "$SRC" "$img") && [[ -n $e ]] || die "$t mkdwarfs failed"
			WALL[$t]+="$e " CPU[$t]+="$c " RSS[$t]+="$m "
			SIZE[$t]=$(stat -c %s "$img")
			log "build $t run $((r + 1)): ${e}s"
		done
	done
	echo
	echo "## godwarfs --categorize -l7 beside the reference ($RUNS builds each, order rotated, cold page cache, medians)"
	echo
	echo "| build | image bytes | size / ref | wall s | wall / ref | CPU s | CPU / ref | peak RSS MiB | ref check-integrity | ref dwarfsextract |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
	for t in "${tools[@]}"; do
		w=$(printf '%s\n' ${WALL[$t]} | median) c=$(printf '%s\n' ${CPU[$t]} | median) m=$(printf '%s\n' ${RSS[$t]} | median)
		eval "W_$t=$w C_$t=$c"
		ck=- rx=-
		if [[ $t != reference ]]; then
			ck=FAILED rx=FAILED
			"$REF_DWARFS/dwarfsck" --check-integrity "$WORK/w-$t.dwarfs" >/dev/null 2>&1 && ck=OK
			rm -rf "$WORK/x" && mkdir "$WORK/x"
			"$REF_DWARFS/dwarfsextract" -i "$WORK/w-$t.dwarfs" -o "$WORK/x" >/dev/null 2>&1 &&
				diff -r --no-dereference "$SRC" "$WORK/x" >/dev/null && rx=same
			[[ $ck == OK && $rx == same ]] || FAILED=1
		fi
		wr=W_$t cr=C_$t
		echo "| $t | ${SIZE[$t]} | $(ratio3 "${SIZE[$t]}" "${SIZE[reference]}") | $w | $(ratio3 "${!wr}" "$(printf '%s\n' ${WALL[reference]} | median)") | $c | $(ratio3 "${!cr}" "$(printf '%s\n' ${CPU[reference]} | median)") | $(mib $((m * 1024))) | $ck | $rx |"
	done
	echo
	echo "(runs, wall s: godwarfs ${WALL[godwarfs]}; static ${WALL[static]}; reference ${WALL[reference]})"
fi

if step speed; then
	img=$WORK/ref-default-l7.dwarfs
	[[ -f $img ]] || "$REF_DWARFS/mkdwarfs" -i "$SRC" -o "$img" --categorize -l7 --no-progress --log-level=error || die "reference build failed"
	echo
	echo "## Full dwarfsextract of the reference's --categorize -l7 image (cold page cache, $RUNS runs each alternated)"
	echo
	echo "| output | godwarfs s | reference s | godwarfs/reference | runs godwarfs | runs reference |"
	echo "|---|---:|---:|---:|---|---|"
	for out in dir tar; do
		declare -A X=()
		for ((r = 0; r < RUNS; r++)); do
			for t in $(pair_order "$r"); do
				ex=$BIN/dwarfsextract
				[[ $t == reference ]] && ex=$REF_DWARFS/dwarfsextract
				args=(-f gnutar -o /dev/null)
				[[ $out == dir ]] && rm -rf "$WORK/x" && mkdir "$WORK/x" && args=(-o "$WORK/x")
				cold
				t0=$(now_ns)
				"$ex" -i "$img" "${args[@]}" 2>/dev/null || die "$t dwarfsextract failed"
				X[$t]+="$(secs "$t0" "$(now_ns)") "
			done
		done
		g=$(printf '%s\n' ${X[godwarfs]} | median) f=$(printf '%s\n' ${X[reference]} | median)
		label="a directory"
		[[ $out == tar ]] && label="a tar to /dev/null"
		echo "| $label | $g | $f | $(ratio3 "$g" "$f") | ${X[godwarfs]} | ${X[reference]} |"
		unset X
	done
	rm -rf "$WORK/x"
fi

if step bigwav; then
	wav=$BENCH_DIR/corpus/bigwav
	if [[ ! -f $wav.ready ]]; then
		mkdir -p "$wav"
		(cd "$REPO_ROOT" && go run ./bench/genmedia -wav "$wav/big.wav" -size "$BIGWAV_SIZE") || die "generating the WAV failed"
		touch "$wav.ready"
	fi
	# Builds of the WAV alone, alternated: FLAC dominates them.
	declare -A BW BC
	for ((r = 0; r < RUNS; r++)); do
		for t in $(pair_order "$r"); do
			mk=$BIN/mkdwarfs
			[[ $t == reference ]] && mk=$REF_DWARFS/mkdwarfs
			read -r e c _ < <(timed_build "$mk" "$wav" "$WORK/bigwav-$t.dwarfs") && [[ -n $e ]] || die "$t build of the WAV failed"
			BW[$t]+="$e " BC[$t]+="$c "
		done
	done
	echo
	echo "## Build of a $(mib "$(stat -c %s "$wav/big.wav")") MiB WAV (--categorize -l7, $RUNS builds each alternated, cold page cache, medians)"
	echo
	echo "| tool | image bytes | wall s | CPU s | runs wall s |"
	echo "|---|---:|---:|---:|---|"
	for t in godwarfs reference; do
		echo "| $t | $(stat -c %s "$WORK/bigwav-$t.dwarfs") | $(printf '%s\n' ${BW[$t]} | median) | $(printf '%s\n' ${BC[$t]} | median) | ${BW[$t]} |"
	done
	echo
	echo "- godwarfs/reference: size $(ratio3 "$(stat -c %s "$WORK/bigwav-godwarfs.dwarfs")" "$(stat -c %s "$WORK/bigwav-reference.dwarfs")"), wall $(ratio3 "$(printf '%s\n' ${BW[godwarfs]} | median)" "$(printf '%s\n' ${BW[reference]} | median)"), CPU $(ratio3 "$(printf '%s\n' ${BC[godwarfs]} | median)" "$(printf '%s\n' ${BC[reference]} | median)")"
	rm -f "$WORK/bigwav-godwarfs.dwarfs"
	img=$WORK/bigwav-reference.dwarfs
	echo
	echo "## $(mib "$(stat -c %s "$wav/big.wav")") MiB WAV packed by the reference (--categorize -l7, $(stat -c %s "$img") bytes) read through the mount"
	ROUNDS=$RUNS "$BENCH_SRC/readmem.sh" "$img"
fi
[[ -z ${FAILED:-} ]] || die "some image did not read back the same (see the tables)"
