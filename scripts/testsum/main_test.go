package main

import (
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	const (
		pass = `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
`
		skip = `{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: nginx not installed\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
`
		fail = `{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:3: got 2, want 3\n"}
{"Action":"fail","Package":"p","Test":"TestC"}
`
		pkgOK   = `{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}` + "\n" + `{"Action":"pass","Package":"p"}` + "\n"
		pkgFail = `{"Action":"output","Package":"q","Output":"q/x.go:1:1: syntax error\n"}` + "\n" + `{"Action":"fail","Package":"q"}` + "\n"
	)
	for _, tc := range []struct {
		name   string
		in     string
		noSkip bool
		code   int
		want   []string
	}{
		{"all pass", pass + pkgOK, false, 0, []string{"ok  \tp\t0.1s", "1 passed, 0 failed, 0 skipped"}},
		{"skip allowed", pass + skip + pkgOK, false, 0, []string{"p TestB: b_test.go:9: nginx not installed", "1 passed, 0 failed, 1 skipped"}},
		{"skip refused", pass + skip + pkgOK, true, 1, []string{"tests skipped where none may"}},
		{"test fails", pass + fail + pkgOK, false, 1, []string{"got 2, want 3", "FAILED: p TestC", "1 passed, 1 failed, 0 skipped"}},
		{"build fails", pkgFail, false, 1, []string{"syntax error"}},
		{"no input", "", false, 1, []string{"no package result"}},
		{"not json", "# p\nbuild error\n", false, 1, []string{"build error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if code := run(strings.NewReader(tc.in), &out, tc.noSkip); code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
