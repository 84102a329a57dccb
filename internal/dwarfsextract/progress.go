package dwarfsextract

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Progress reports extraction progress: whole-percent lines to Lines
// (--stdout-progress) and a self-overwriting line to Term (a terminal).
type Progress struct {
	Lines io.Writer
	Term  io.Writer

	mu               sync.Mutex
	files, doneFiles int
	bytes, doneBytes int64
	lastPct          int
	lastTerm         time.Time
}

// Start sets the totals.
func (p *Progress) Start(files int, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files, p.bytes, p.lastPct = files, bytes, -1
}

// Add records finished work.
func (p *Progress) Add(files int, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.doneFiles += files
	p.doneBytes += bytes
	p.report(false)
}

// Finish prints the final state.
func (p *Progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.report(true)
	if p.Term != nil {
		fmt.Fprintln(p.Term)
	}
}

func (p *Progress) line() string {
	return fmt.Sprintf("%3d%% extracted: %d/%d files, %d/%d bytes", p.pct(), p.doneFiles, p.files, p.doneBytes, p.bytes)
}

func (p *Progress) pct() int {
	if p.bytes == 0 {
		if p.files == 0 {
			return 100
		}
		return p.doneFiles * 100 / p.files
	}
	return int(p.doneBytes * 100 / p.bytes)
}

func (p *Progress) report(final bool) {
	pct := p.pct()
	if p.Lines != nil && (pct != p.lastPct || final) {
		if pct != p.lastPct {
			fmt.Fprintln(p.Lines, p.line())
		}
		p.lastPct = pct
	}
	if p.Term != nil && (final || time.Since(p.lastTerm) > 100*time.Millisecond) {
		p.lastTerm = time.Now()
		fmt.Fprintf(p.Term, "\r%s", p.line())
	}
}
