//go:build unix

package block

import (
	"runtime/debug"
	"testing"
)

// A slice kept past Release of a block that left the cache points into
// memory handed back to the system: touching it faults instead of reading
// stale data.
func TestCacheUseAfterReleaseFaults(t *testing.T) {
	e := newPinEnv(t)
	p := e.pin(t, 1)
	kept := p.Bytes()
	e.c.Tidy(0)
	p.Release()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r == nil {
			t.Error("reading a released block did not fault")
		}
	}()
	_ = kept[0]
	t.Errorf("read %d from a released block", kept[0])
}
