#!/usr/bin/env bash
# make bench-multi: many small images served by one `dwarfs multi` process
# beside one driver process per image (the reference driver when
# REF_DWARFS is set, and godwarfs' own single-image driver). The images
# are NIMAGES "versions" of a source tree: version k holds 24 of the
# top-level directories of $(go env GOROOT)/src (a window that moves by 3
# per version, so neighbours share most of their files) and a VERSION
# file; built once at -l 3 under $BENCH_DIR/images/multi. With TREES=DIR
# the images are instead one per subdirectory of DIR (the redis corpus of
# bench/corpus.sh: one image per release tag). Each round, in turn and
# after dropping the page cache, every setup mounts all images (timed
# until the last mount command returns), then times `find` over
# everything, an lstat of every file (bench/statall, one thread) and a
# read of every file (`find | xargs $READ`); even rounds take the setups in
# reverse order. Reported: the total PSS (and
# anonymous memory) of the driver processes after mounting and after the
# read, the mount time, the three walks' times and the drivers' CPU time
# during the read, and whether every setup read the same bytes (the
# outputs of READ, last round). Medians over the rounds and ratios to the reference
# (or to the godwarfs single drivers).
#
#   NIMAGES        images (default 40; with TREES: the subdirectories)
#   TREES          a directory whose subdirectories become one image each
#   LEVEL          mkdwarfs level of the images built (default 3)
#   READ           the command that reads each file (default cat; sha1sum)
#   ROUNDS         rounds (default 3)
#   MULTI_CACHE    cachesize of dwarfs multi, all images together (512m)
#   SINGLE_CACHE   cachesize of each single-image driver (64m)
#   REF_DWARFS     directory with the reference dwarfs driver
#   SKIP_SINGLE    set: leave out godwarfs' single-image drivers
# Needs root (drop_caches, mount).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

NIMAGES=${NIMAGES:-40}
ROUNDS=${ROUNDS:-3}
MULTI_CACHE=${MULTI_CACHE:-512m}
SINGLE_CACHE=${SINGLE_CACHE:-64m}
REF_DWARFS=${REF_DWARFS:-}
TREES=${TREES:-}
LEVEL=${LEVEL:-3}
READ=${READ:-cat}
need_root "multi.sh"
for t in go fusermount3 find xargs awk sort getfattr; do need "$t"; done
[[ -w /proc/sys/vm/drop_caches ]] || die "cannot write /proc/sys/vm/drop_caches"
ensure_bin mkdwarfs dwarfs

if [[ -n $TREES ]]; then
	[[ -d $TREES ]] || die "TREES=$TREES is not a directory"
	mapfile -t trees < <(find "$TREES" -mindepth 1 -maxdepth 1 -type d | sort)
	NIMAGES=${#trees[@]}
	((NIMAGES > 0)) || die "no subdirectories in $TREES"
	IMGS=$BENCH_DIR/images/multi-$(basename "$TREES")-l$LEVEL
	if [[ ! -f $IMGS/ready-$NIMAGES ]]; then
		log "building $NIMAGES images of $TREES in $IMGS"
		rm -rf "$IMGS" && mkdir -p "$IMGS"
		for t in "${trees[@]}"; do
			"$BIN/mkdwarfs" -i "$t" -o "$IMGS/$(basename "$t").dwarfs" -l "$LEVEL" --log-level=error
		done
		touch "$IMGS/ready-$NIMAGES"
	fi
	mapfile -t images < <(for t in "${trees[@]}"; do echo "$IMGS/$(basename "$t").dwarfs"; done)
else
	IMGS=$BENCH_DIR/images/multi
	if [[ ! -f $IMGS/ready-$NIMAGES ]]; then
		log "building $NIMAGES images in $IMGS"
		src=$(go env GOROOT)/src
		mapfile -t dirs < <(ls "$src" | grep -v -E '^(cmd|runtime|crypto|internal|vendor|syscall|testdata)$')
		n=${#dirs[@]}
		rm -rf "$IMGS" && mkdir -p "$IMGS"
		tmp=$(mktemp -d)
		for ((k = 0; k < NIMAGES; k++)); do
			t=$tmp/v$k
			mkdir -p "$t"
			for ((j = 0; j < 24; j++)); do cp -r "$src/${dirs[$(((k * 3 + j) % n))]}" "$t/"; done
			echo "version $k" >"$t/VERSION"
			"$BIN/mkdwarfs" -i "$t" -o "$IMGS/v$k.dwarfs" -l "$LEVEL" --log-level=error
			rm -rf "$t"
		done
		rmdir "$tmp"
		touch "$IMGS/ready-$NIMAGES"
	fi
	mapfile -t images < <(for ((k = 0; k < NIMAGES; k++)); do echo "$IMGS/v$k.dwarfs"; done)
fi
STATALL=$BENCH_DIR/statall
(cd "$REPO_ROOT" && go build -o "$STATALL" ./bench/statall) || die "cannot build bench/statall"

setups=(multi)
[[ -n ${SKIP_SINGLE:-} ]] || setups+=(godwarfs)
if [[ -n $REF_DWARFS && -x $REF_DWARFS/dwarfs ]]; then
	setups+=(reference)
else
	echo "skipped: reference driver: REF_DWARFS is not set or has no dwarfs (point it at the reference tools)"
fi
((${#setups[@]} > 1)) || die "nothing to compare the multi driver with"

M=$(mktemp -d)
cleanup() {
	local d
	for d in "$M"/*/; do
		[[ -d $d ]] && { fusermount3 -u "$d" 2>/dev/null || umount -l "$d" 2>/dev/null || true; }
	done
	rm -rf "$M" "$M.list"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# pss PID...: total PSS and anonymous KiB of the processes.
pss() {
	local p
	for p in "$@"; do cat "/proc/$p/smaps_rollup"; done |
		awk '/^Pss:/ {p += $2} /^Anonymous:/ {a += $2} END {printf "%d %d\n", p, a}'
}
# cpu PID...: user+system CPU milliseconds of the processes so far.
cpu() {
	local p
	for p in "$@"; do cat "/proc/$p/stat"; done |
		awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); t += $12 + $13} END {printf "%d\n", t * 1000 / hz}'
}

RES=$(mktemp)
echo "$NIMAGES images, $ROUNDS rounds; multi cachesize=$MULTI_CACHE, single drivers cachesize=$SINGLE_CACHE each"
machine_note
for ((r = 1; r <= ROUNDS; r++)); do
	# Even rounds run the setups in reverse order, so that none always
	# comes first after the page cache was dropped.
	order=("${setups[@]}")
	if ((r % 2 == 0)); then
		order=()
		for ((i = ${#setups[@]} - 1; i >= 0; i--)); do order+=("${setups[i]}"); done
	fi
	for s in "${order[@]}"; do
		rm -rf "${M:?}"/*
		sync
		echo 3 >/proc/sys/vm/drop_caches
		mnts=()
		t0=$(now_ns)
		if [[ $s == multi ]]; then
			mkdir "$M/all"
			"$BIN/dwarfs" multi "${images[@]}" "$M/all" -o "cachesize=$MULTI_CACHE"
			mnts=("$M/all")
		else
			bin=$BIN/dwarfs
			[[ $s == reference ]] && bin=$REF_DWARFS/dwarfs
			for i in "${images[@]}"; do
				d=$M/$(basename "$i" .dwarfs)
				mkdir "$d"
				"$bin" "$i" "$d" -o "cachesize=$SINGLE_CACHE" 2>/dev/null
				mnts+=("$d")
			done
		fi
		t1=$(now_ns)
		mapfile -t pids < <(for d in "${mnts[@]}"; do getfattr --absolute-names --only-values -n user.dwarfs.driver.pid "$d"; echo; done | sort -u)
		sleep 1
		read -r p0 a0 < <(pss "${pids[@]}")
		tf=$(now_ns)
		find "$M" >/dev/null
		ts=$(now_ns)
		(cd "$M" && find . -type f) >"$M.list"
		tl=$(now_ns)
		"$STATALL" -list "$M.list" -prefix "$M" >/dev/null || log "$s: statall reported errors"
		te=$(now_ns)
		c0=$(cpu "${pids[@]}")
		t2=$(now_ns)
		# From the directory that holds the images, so that every setup
		# prints the same paths, to compare the setups' results.
		root=$M
		[[ $s == multi ]] && root=$M/all
		(cd "$root" && find . -type f -print0 | xargs -0 "$READ" | LC_ALL=C sort >"$RES.read.$s")
		t3=$(now_ns)
		c1=$(cpu "${pids[@]}")
		sleep 1
		read -r p1 a1 < <(pss "${pids[@]}")
		for d in "${mnts[@]}"; do fusermount3 -u "$d"; done
		echo "$s $(secs "$t0" "$t1") $((p0 * 1024)) $((a0 * 1024)) $(secs "$t2" "$t3") $((c1 - c0)) $((p1 * 1024)) $((a1 * 1024)) $(secs "$tf" "$ts") $(secs "$tl" "$te")" >>"$RES"
		printf 'round %d %-10s procs %3d  mount %6ss  PSS %7s MiB (anon %7s)  find %6ss  stat %6ss  read %6ss  cpu %6sms  PSS after %7s MiB (anon %7s)  load %s\n' \
			"$r" "$s" "${#pids[@]}" "$(secs "$t0" "$t1")" "$(mib $((p0 * 1024)))" "$(mib $((a0 * 1024)))" \
			"$(secs "$tf" "$ts")" "$(secs "$tl" "$te")" "$(secs "$t2" "$t3")" "$((c1 - c0))" "$(mib $((p1 * 1024)))" "$(mib $((a1 * 1024)))" "$(cut -d' ' -f1 /proc/loadavg)"
		sleep 2
	done
done

same=1
for s in "${setups[@]}"; do
	if ! cmp -s "$RES.read.multi" "$RES.read.$s"; then
		same=0
		echo "DIFFERENT: $READ of every file through $s differs from multi (last round)"
		diff "$RES.read.multi" "$RES.read.$s" | head -5
	fi
done
((same)) && echo "same results: $READ of every file gave the same output through every setup (last round: $(wc -l <"$RES.read.multi") files)"

# median SETUP COLUMN
median() {
	awk -v s="$1" -v c="$2" '$1 == s {print $c}' "$RES" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
base=godwarfs
[[ " ${setups[*]} " == *" reference "* ]] && base=reference
echo
echo "| setup | mount s | PSS mounted MiB | find s | stat s | read ($READ) s | driver CPU ms | PSS after read MiB | anon after read MiB |"
echo "|---|---|---|---|---|---|---|---|---|"
for s in "${setups[@]}"; do
	echo "| $s | $(median "$s" 2) | $(mib "$(median "$s" 3)") | $(median "$s" 9) | $(median "$s" 10) | $(median "$s" 5) | $(median "$s" 6) | $(mib "$(median "$s" 7)") | $(mib "$(median "$s" 8)") |"
done
echo
echo "ratios multi/$base (medians): mount $(ratio "$(median multi 2)" "$(median $base 2)"), PSS mounted $(ratio "$(median multi 3)" "$(median $base 3)"), find $(ratio "$(median multi 9)" "$(median $base 9)"), stat $(ratio "$(median multi 10)" "$(median $base 10)"), read $(ratio "$(median multi 5)" "$(median $base 5)"), CPU $(ratio "$(median multi 6)" "$(median $base 6)"), PSS after read $(ratio "$(median multi 7)" "$(median $base 7)")"
rm -f "$RES" "$RES".read.*
