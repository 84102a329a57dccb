//go:build unix

package cli

import (
	"bytes"
	"context"
	"reflect"
	"syscall"
	"testing"
)

// TestToolRun: Run hands the tool its args and stdio, and with
// CancelOnSignal a SIGINT cancels the tool's context instead of ending the
// process (were it not caught, the test binary would die).
func TestToolRun(t *testing.T) {
	var out bytes.Buffer
	var gotArgs []string
	tool := Tool{Name: "t", CancelOnSignal: true, Main: func(ctx context.Context, args []string, s Stdio) int {
		gotArgs = args
		s.Out.Write([]byte("hi"))
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
			t.Error(err)
			return 9
		}
		<-ctx.Done()
		return 3
	}}
	if code := tool.Run([]string{"t", "-x"}, Stdio{Out: &out}); code != 3 {
		t.Errorf("exit status %d, want 3", code)
	}
	if !reflect.DeepEqual(gotArgs, []string{"t", "-x"}) || out.String() != "hi" {
		t.Errorf("args %q, output %q", gotArgs, out.String())
	}
}
