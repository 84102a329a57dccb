//go:build unix

package mkdwarfs

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLogLevels: each --log-level adds its notes and no others.
func TestLogLevels(t *testing.T) {
	src := t.TempDir()
	piece := bytes.Repeat([]byte("0123456789abcdef"), 2048) // repeats: segment matches
	os.WriteFile(filepath.Join(src, "a"), piece, 0o644)
	os.WriteFile(filepath.Join(src, "b"), piece, 0o644) // a duplicate
	img := filepath.Join(t.TempDir(), "x.dwarfs")
	line := func(tag, text string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^` + tag + ` \d\d:\d\d:\d\d\.\d{6} ` + text)
	}
	verbose := []*regexp.Regexp{line("V", "block size 16777216 bytes; segment search: 4096-byte window at 512-byte steps over 2 block"),
		line("V", `ordered 1 contents by nilsimsa \[`), line("V", `segmented 32768 bytes into 1 blocks`)}
	debug := []*regexp.Regexp{line("D", "duplicate: b has the contents of a"), line("D", `segmented a: 32768 bytes in \d+ chunks`), line("D", "order 0: a")}
	trace := []*regexp.Regexp{line("T", "segment match: a at ")}
	for _, tc := range []struct {
		level string
		want  int // how many of the groups above must appear
	}{{"warn", 0}, {"info", 0}, {"verbose", 1}, {"debug", 2}, {"trace", 3}} {
		code, _, stderr := run("-i", src, "-o", img, "-f", "--log-level", tc.level, "--no-progress")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.level, code, stderr)
		}
		for i, group := range [][]*regexp.Regexp{verbose, debug, trace} {
			for _, re := range group {
				if got := re.MatchString(stderr); got != (i < tc.want) {
					t.Errorf("--log-level %s: %q found: %v\n%s", tc.level, re, got, stderr)
				}
			}
		}
		if summary := strings.Contains(stderr, "image ("); summary != (tc.level != "warn") {
			t.Errorf("--log-level %s: summary shown: %v", tc.level, summary)
		}
	}
}

func TestCompressNicenessOption(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
		err  string
	}{
		{nil, 5, ""},
		{[]string{"--compress-niceness", "0"}, 0, ""},
		{[]string{"--compress-niceness", "12"}, 12, ""},
		{[]string{"--compress-niceness", "nice"}, 0, "compress-niceness"},
		{[]string{"--compress-niceness", "40"}, 0, "compress-niceness"},
	} {
		cfg, err := ParseConfig(append([]string{"-i", "x", "-o", "y"}, tc.args...), nil, nil)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.err)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case cfg.Niceness != tc.want || cfg.target(nil).Niceness != tc.want:
			t.Errorf("%v: niceness %d, target %d, want %d", tc.args, cfg.Niceness, cfg.target(nil).Niceness, tc.want)
		}
	}
}
