package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	dep := func(path, v string) *debug.Module { return &debug.Module{Path: path, Version: v} }
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
		text []string
	}{
		{"release", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: ModulePath, Version: "v0.4.2"}}, "v0.4.2",
			[]string{"mkdwarfs (godwarfs) v0.4.2\n", "built with go1.26.0 for " + runtime.GOOS + "/" + runtime.GOARCH + "\n"}},
		{"source tree", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: ModulePath, Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}},
			"devel-0123456789ab-dirty", []string{"revision 0123456789abcdef0123 (2026-01-02T03:04:05Z, modified)\n"}},
		{"clean source tree", debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}}, "devel-abc", []string{"revision abc\n"}},
		{"no stamp", debug.BuildInfo{Main: debug.Module{Path: ModulePath}}, "devel", nil},
		{"library user", debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v9.9.9"},
			Deps:     []*debug.Module{dep("golang.org/x/sys", "v0.1.0"), dep(ModulePath, "v0.5.0")},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "ffff"}}}, "v0.5.0", nil},
		{"replaced", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: ModulePath, Version: "v0.5.0", Replace: dep("example.com/fork", "v0.5.1")}}}, "v0.5.1", nil},
		{"not linked", debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v1.0.0"}}, "devel", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inf := FromBuildInfo(&tc.bi)
			if got := inf.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			text := inf.Text("mkdwarfs")
			if !strings.HasPrefix(text, "mkdwarfs (godwarfs) "+tc.want+"\n") {
				t.Errorf("Text() = %q", text)
			}
			for _, s := range tc.text {
				if !strings.Contains(text, s) {
					t.Errorf("Text() = %q, missing %q", text, s)
				}
			}
			if inf.GoVersion == "" {
				t.Error("no Go version")
			}
		})
	}
}
