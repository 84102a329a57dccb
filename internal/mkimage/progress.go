package mkimage

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/godwarfs/godwarfs/dedup"
)

// progress shows running totals on stderr. ascii/unicode redraw one line
// and only on a terminal; simple prints a line now and then.
type progress struct {
	mode  string
	w     io.Writer
	cur   atomic.Pointer[dedup.Stats]
	done  chan struct{}
	wg    sync.WaitGroup
	start time.Time
}

func startProgress(mode string, w io.Writer) *progress {
	p := &progress{mode: mode, w: w, done: make(chan struct{}), start: time.Now()}
	if mode == "ascii" || mode == "unicode" {
		f, ok := w.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			p.mode = "none"
		}
	}
	if p.mode == "none" {
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		every := 200 * time.Millisecond
		if p.mode == "simple" {
			every = 2 * time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				if p.mode != "simple" {
					fmt.Fprint(p.w, "\r\033[K")
				}
				return
			case <-t.C:
				p.draw()
			}
		}
	}()
	return p
}

func (p *progress) update(s dedup.Stats) {
	if p.mode != "none" {
		p.cur.Store(&s)
	}
}

func (p *progress) draw() {
	s := p.cur.Load()
	if s == nil {
		return
	}
	bar := "|"
	if p.mode == "unicode" {
		bar = "│"
	}
	line := fmt.Sprintf("%s files %d %s dups %d %s segments %d %s blocks %d (%s) %s %s",
		bar, s.Files, bar, s.DupFiles, bar, s.SegMatches, bar, s.Blocks, human(s.BlockBytes), bar,
		time.Since(p.start).Round(time.Second))
	if p.mode == "simple" {
		fmt.Fprintln(p.w, line)
	} else {
		fmt.Fprint(p.w, "\r\033[K"+line)
	}
}

func (p *progress) stop() {
	if p.mode == "none" {
		return
	}
	close(p.done)
	p.wg.Wait()
}

func human(n int64) string {
	const u = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	i := -1
	for f >= 1024 && i < len(u)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, u[i])
}

func printSummary(w io.Writer, r *Result, d time.Duration) {
	s := r.Stats
	fmt.Fprintf(w, "scanned %d dirs, %d symlinks, %d files (%d hardlinks), %d devices, %d specials\n",
		s.Dirs, s.Symlinks, s.Files, s.Hardlinks, s.Devices, s.Specials)
	fmt.Fprintf(w, "found %d duplicate files (%s saved), %d matching segments (%s saved)\n",
		s.DupFiles, human(s.DupBytes), s.SegMatches, human(s.SegMatchBytes))
	if s.HoleBytes > 0 {
		fmt.Fprintf(w, "stored %s of holes as sparse chunks\n", human(s.HoleBytes))
	}
	if s.Errors > 0 {
		fmt.Fprintf(w, "skipped %d unreadable entries\n", s.Errors)
	}
	ratio := 0.0
	if s.InputBytes > 0 {
		ratio = 100 * float64(r.ImageBytes) / float64(s.InputBytes)
	}
	fmt.Fprintf(w, "%s input -> %d blocks, %s block data -> %s image (%.2f%%) in %s\n",
		human(s.InputBytes), s.Blocks, human(s.BlockBytes), human(r.ImageBytes), ratio, d.Round(time.Millisecond))
}
