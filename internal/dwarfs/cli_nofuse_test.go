//go:build windows || (linux && (386 || arm))

package dwarfs

import (
	"bytes"
	"strings"
	"testing"
)

// Where it cannot mount (Windows, 32-bit Linux) dwarfs must say why it cannot mount instead of failing
// obscurely, and still answer --help.
func TestSaysNotSupported(t *testing.T) {
	var out, errb bytes.Buffer
	c := &CLI{Stdout: &out, Stderr: &errb}
	if code := c.Run([]string{"dwarfs", "image.dwarfs", `C:\mnt`}); code != ExitFail {
		t.Fatalf("exit %d, want %d", code, ExitFail)
	}
	if !strings.Contains(errb.String(), "mounting is not supported in this build for ") {
		t.Fatalf("stderr %q does not say mounting is unsupported", errb.String())
	}
	out.Reset()
	if code := c.Run([]string{"dwarfs", "--help"}); code != ExitOK || !strings.Contains(out.String(), "dwarfs") {
		t.Fatalf("--help: exit %d, output %q", code, out.String())
	}
}
