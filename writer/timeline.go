package writer

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Timeline is how a build spent its time. Its stages follow one another
// and together cover the build from start to end, so their CPU times add
// up to the process's; the block encoders run across several of them
// (from the first block made while segmenting to the last one written),
// which Compress and EncoderCPU show.
type Timeline struct {
	Stages []Stage
	// Wall and CPU are the whole build's; CPU is the process's user and
	// system time, CPUKnown false where the OS does not tell.
	Wall, CPU time.Duration
	CPUKnown  bool
	// CompressStart and CompressEnd are when the first block began to be
	// compressed and the last was written, since the build started.
	CompressStart, CompressEnd time.Duration
	// EncoderCPU is the CPU time of the threads that ran the encoders
	// (Linux; EncoderCPUKnown is false elsewhere). A block that the
	// encoder cuts into jobs runs some on threads of its own, not counted.
	EncoderCPU      time.Duration
	EncoderCPUKnown bool
	Blocks          int
}

// Stage is one part of a build's timeline.
type Stage struct {
	Name       string
	Start, End time.Duration // since the build started
	CPU        time.Duration // the process's CPU time meanwhile
}

// Cores is how many cores a stretch kept busy on average.
func cores(cpu, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return float64(cpu) / float64(wall)
}

// WriteTo prints the timeline as a table.
func (tl *Timeline) WriteTo(w io.Writer) (int64, error) {
	var n int64
	p := func(format string, args ...any) {
		k, _ := fmt.Fprintf(w, format, args...)
		n += int64(k)
	}
	secs := func(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
	cpu := func(d, wall time.Duration) (string, string) {
		if !tl.CPUKnown {
			return "-", "-"
		}
		return secs(d), fmt.Sprintf("%.2f", cores(d, wall))
	}
	p("%-12s %9s %9s %9s %9s %6s\n", "phase", "start", "end", "wall", "CPU", "cores")
	for _, s := range tl.Stages {
		c, k := cpu(s.CPU, s.End-s.Start)
		p("%-12s %9s %9s %9s %9s %6s\n", s.Name, secs(s.Start), secs(s.End), secs(s.End-s.Start), c, k)
	}
	c, k := cpu(tl.CPU, tl.Wall)
	p("%-12s %9s %9s %9s %9s %6s\n", "total", "", "", secs(tl.Wall), c, k)
	if tl.Blocks > 0 {
		enc := ""
		if tl.EncoderCPUKnown {
			enc = fmt.Sprintf(", %s CPU in the encoders (%.2f cores while they ran)", secs(tl.EncoderCPU),
				cores(tl.EncoderCPU, tl.CompressEnd-tl.CompressStart))
		}
		p("compressing %d blocks: %s to %s%s\n", tl.Blocks, secs(tl.CompressStart), secs(tl.CompressEnd), enc)
	}
	return n, nil
}

// timeline records a build's stages as they begin; safe for concurrent use.
type timeline struct {
	mu      sync.Mutex
	start   time.Time
	cpu0    time.Duration
	cpuOK   bool
	tl      Timeline
	cur     string
	curFrom time.Duration
	curCPU  time.Duration
	logf    func(format string, args ...any) // nil: no log line per stage
}

func newTimeline(logf func(string, ...any)) *timeline {
	t := &timeline{start: time.Now(), logf: logf}
	t.cpu0, t.cpuOK = processCPU()
	t.tl.CPUKnown = t.cpuOK
	return t
}

func (t *timeline) now() (time.Duration, time.Duration) {
	wall := time.Since(t.start)
	var cpu time.Duration
	if t.cpuOK {
		c, _ := processCPU()
		cpu = c - t.cpu0
	}
	return wall, cpu
}

// mark ends the current stage and begins the named one ("" begins none).
func (t *timeline) mark(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if name == t.cur {
		return
	}
	wall, cpu := t.now()
	if t.cur != "" {
		s := Stage{Name: t.cur, Start: t.curFrom, End: wall, CPU: cpu - t.curCPU}
		t.tl.Stages = append(t.tl.Stages, s)
		if t.logf != nil {
			cpuText := ""
			if t.cpuOK {
				cpuText = fmt.Sprintf(", %.2fs CPU (%.2f cores)", s.CPU.Seconds(), cores(s.CPU, s.End-s.Start))
			}
			t.logf("phase %s: %.2fs to %.2fs%s", s.Name, s.Start.Seconds(), s.End.Seconds(), cpuText)
		}
	}
	if t.cur == "" && len(t.tl.Stages) == 0 {
		// The first phase takes in the setup before it.
		wall, cpu = 0, 0
	}
	t.cur, t.curFrom, t.curCPU = name, wall, cpu
}

// finish ends the last stage and returns the timeline, with the
// pipeline's figures.
func (t *timeline) finish(p *pipeline) *Timeline {
	t.mark("")
	t.mu.Lock()
	defer t.mu.Unlock()
	tl := t.tl
	tl.Stages = append([]Stage(nil), tl.Stages...)
	tl.Wall, tl.CPU = t.now()
	if p != nil {
		if first := p.firstStart.Load(); first != 0 {
			tl.CompressStart = time.Unix(0, first).Sub(t.start)
			tl.CompressEnd = time.Unix(0, p.lastWritten.Load()).Sub(t.start)
		}
		tl.EncoderCPU = time.Duration(p.encoderCPU.Load())
		tl.EncoderCPUKnown = p.encoderCPUKnown.Load()
		tl.Blocks = int(p.written.Load())
	}
	return &tl
}
