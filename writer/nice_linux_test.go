package writer

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/encode"
)

// TestPipelineNiceness: with a niceness the blocks are compressed on
// threads whose nice value is raised by it (capped at 19); other threads
// keep theirs.
func TestPipelineNiceness(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	base, err := threadNice(unix.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	for _, inc := range []int{0, 5, 30} {
		var buf bytes.Buffer
		p := newPipeline(context.Background(), block.NewWriter(&buf, block.WriterOptions{}), 2, 0, inc)
		var mu sync.Mutex
		seen := map[int]bool{}
		for range 8 {
			err := p.Submit(1, func(Threads, *encode.Workspace) (block.Compression, []byte, error) {
				n, err := threadNice(unix.Gettid())
				if err != nil {
					return 0, nil, err
				}
				mu.Lock()
				seen[n] = true
				mu.Unlock()
				return block.CompNone, []byte("x"), nil
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		want := min(base+inc, 19)
		if len(seen) != 1 || !seen[want] {
			t.Errorf("niceness %d: workers ran at nice %v, want only %d (base %d)", inc, seen, want, base)
		}
		if n, _ := threadNice(unix.Gettid()); n != base {
			t.Errorf("niceness %d: the submitting thread's nice changed to %d", inc, n)
		}
	}
}
