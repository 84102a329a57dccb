//go:build linux && !386 && !arm

package fusefs

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// Each distinct message is logged once, and at most maxIOErrorMessages of
// them, then one line saying the rest are not.
func TestIOErrorsLoggedOnceAndBounded(t *testing.T) {
	var b bytes.Buffer
	l := ioErrors{w: &b}
	for i := range maxIOErrorMessages + 50 {
		l.log(fmt.Errorf("img: block %d: damaged", i))
		l.log(fmt.Errorf("img: block %d: damaged", i))
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != maxIOErrorMessages+1 {
		t.Fatalf("%d lines logged, want %d", len(lines), maxIOErrorMessages+1)
	}
	if lines[0] != "dwarfs: I/O error: img: block 0: damaged" || !strings.Contains(lines[len(lines)-1], "not logging further") {
		t.Errorf("first line %q, last line %q", lines[0], lines[len(lines)-1])
	}
}
