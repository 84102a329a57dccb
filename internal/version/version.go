// Package version tells which godwarfs build is running, from the build
// information the Go toolchain stamps into every binary. The tools print it
// for --version and the image writer records it in history entries.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// ModulePath is the godwarfs module.
const ModulePath = "github.com/godwarfs/godwarfs"

// Info describes a build of godwarfs.
type Info struct {
	// Version is the module version ("v0.3.1", a pseudo-version), or
	// "devel" for a build from a source tree.
	Version string
	// Revision, Time and Modified come from the version control stamp of
	// a source-tree build ("" and false when unknown).
	Revision string
	Time     string
	Modified bool
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Get returns the information of the running binary.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "devel", GoVersion: runtime.Version()}
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo extracts the godwarfs version from bi: the main module's
// when godwarfs is the main module, else that of the dependency (a program
// using the library).
func FromBuildInfo(bi *debug.BuildInfo) Info {
	inf := Info{Version: "devel", GoVersion: bi.GoVersion}
	if inf.GoVersion == "" {
		inf.GoVersion = runtime.Version()
	}
	mod := &bi.Main
	if mod.Path != ModulePath {
		mod = nil
		for _, d := range bi.Deps {
			if d.Path == ModulePath {
				mod = d
				if d.Replace != nil && d.Replace.Version != "" {
					mod = d.Replace
				}
				break
			}
		}
	}
	if mod != nil && mod.Version != "" && mod.Version != "(devel)" {
		inf.Version = mod.Version
	}
	if mod == &bi.Main {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				inf.Revision = s.Value
			case "vcs.time":
				inf.Time = s.Value
			case "vcs.modified":
				inf.Modified = s.Value == "true"
			}
		}
	}
	return inf
}

// String is the short form: the module version, or for a source-tree build
// "devel" plus the first 12 digits of the revision and "-dirty" when the
// tree had uncommitted changes ("devel-0123456789ab-dirty").
func (i Info) String() string {
	if i.Version != "devel" || i.Revision == "" {
		return i.Version
	}
	s := "devel-" + i.Revision[:min(12, len(i.Revision))]
	if i.Modified {
		s += "-dirty"
	}
	return s
}

// Text is the --version output of tool: the version on the first line, the
// revision (if known) and the toolchain below.
func (i Info) Text(tool string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (godwarfs) %s\n", tool, i)
	if i.Revision != "" {
		fmt.Fprintf(&b, "revision %s", i.Revision)
		var extra []string
		if i.Time != "" {
			extra = append(extra, i.Time)
		}
		if i.Modified {
			extra = append(extra, "modified")
		}
		if len(extra) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(extra, ", "))
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "built with %s for %s/%s\n", i.GoVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
