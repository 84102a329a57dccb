package version

import (
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/godwarfs/godwarfs/metadata"
)

// Base is the release this source tree is on its way to; history entries of
// a source-tree build ("devel") carry its numbers.
const Base = "v0.1.0"

// unknown stands in for what the build does not record (a build with
// -buildvcs=false has no revision; Go never records the branch).
const unknown = "unknown"

// Name is the creator string written as metadata dwarfs_version and as the
// history's git_desc ("godwarfs v0.4.2", "godwarfs devel-0123456789ab").
func (i Info) Name() string { return "godwarfs " + i.String() }

// Release reports whether the build is a tagged release: not a source
// tree, not a pseudo-version, not modified.
func (i Info) Release() bool {
	return i.Version != "devel" && !isPseudo(i.Version) && !i.Modified
}

// isPseudo reports whether v is a Go pseudo-version
// (vX.Y.Z-yyyymmddhhmmss-abcdefabcdef, possibly after a pre-release).
func isPseudo(v string) bool {
	i := strings.LastIndexByte(v, '-')
	if i < 0 || len(v)-i-1 != 12 {
		return false
	}
	j := strings.LastIndexAny(v[:i], "-.")
	return j >= 0 && len(v[j+1:i]) == 14
}

// semver splits "v1.2.3-rc1" into 1, 2, 3; missing parts are 0.
func semver(v string) (major, minor, patch uint16) {
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	var out [3]uint16
	for i, p := range strings.SplitN(v, ".", 3) {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			break
		}
		out[i] = uint16(n)
	}
	return out[0], out[1], out[2]
}

// libName shortens a module path and version the way the reference names
// its libraries ("zstd-1.5.4"): host dropped, version without the "v".
func libName(path, ver string) string {
	if i := strings.IndexByte(path, '/'); i > 0 && strings.Contains(path[:i], ".") {
		path = path[i+1:]
	}
	return path + "-" + strings.TrimPrefix(ver, "v")
}

// libraries lists the modules whose code shapes an image's bytes (the
// encoders and checksums) that are linked into the binary, sorted. Only
// these go into history entries, so the standalone tools and the
// multi-call binary, which link different sets of modules, write identical
// images.
func libraries() []string {
	imageLibraries := []string{
		"github.com/DataDog/zstd",
		"github.com/andybalholm/brotli",
		"github.com/cespare/xxhash/v2",
		"github.com/klauspost/compress",
		"github.com/pierrec/lz4/v4",
		"github.com/ulikunitz/xz",
		"github.com/zeebo/xxh3",
	}
	out := []string{}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
	for _, d := range bi.Deps {
		if !slices.Contains(imageLibraries, d.Path) {
			continue
		}
		if d.Replace != nil {
			d = d.Replace
		}
		out = append(out, libName(d.Path, d.Version))
	}
	sort.Strings(out)
	return out
}

// SystemID names the platform the way the reference does ("Linux [x86_64]").
func SystemID() string {
	goos := runtime.GOOS
	switch goos {
	case "linux":
		goos = "Linux"
	case "darwin":
		goos = "Darwin"
	case "freebsd":
		goos = "FreeBSD"
	case "windows":
		goos = "Windows"
	}
	arch := runtime.GOARCH
	switch arch {
	case "amd64":
		arch = "x86_64"
	case "arm64":
		arch = "aarch64"
	case "386":
		arch = "i686"
	}
	return goos + " [" + arch + "]"
}

// HistoryRecord is one HISTORY entry for an image written now by this
// build. Every field the reference tools read unconditionally is set:
// git_rev, git_branch and git_desc (the reference dwarfsck fails on an
// entry without git_desc), and the library versions. args nil omits the
// command line; now nil omits the timestamp.
func (i Info) HistoryRecord(args []string, now *time.Time) metadata.HistoryRecord {
	v := i.Version
	if v == "devel" {
		v = Base
	}
	major, minor, patch := semver(v)
	rev, branch, desc := i.Revision, unknown, i.Name()
	if rev == "" {
		rev = unknown
	}
	rec := metadata.HistoryRecord{
		Version: metadata.DwarfsVersion{
			Major: major, Minor: minor, Patch: patch,
			IsRelease: i.Release(),
			GitRev:    &rev, GitBranch: &branch, GitDesc: &desc,
		},
		SystemID:           SystemID(),
		CompilerID:         "Go " + strings.TrimPrefix(i.GoVersion, "go"),
		LibraryVersions:    libraries(),
		HasLibraryVersions: true,
	}
	if args != nil {
		rec.Arguments = append([]string{}, args...)
		rec.HasArguments = true
	}
	if now != nil {
		t := uint64(max(now.Unix(), 0))
		rec.Timestamp = &t
	}
	return rec
}
