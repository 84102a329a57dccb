package mkdwarfs

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/writer"
)

// Build phases as the progress display names them.
const (
	phaseReading     = dedup.PhaseReading
	phaseScanning    = "scanning"
	phaseSegmenting  = "segmenting"
	phaseCompressing = writer.PhaseCompressing
	phaseWriting     = writer.PhaseWriting
)

// progress shows what mkdwarfs is doing on stderr. ascii and unicode redraw
// one status line in place (only on a terminal): phase, percentage, a bar,
// throughput, ETA and the current file. simple prints a plain line now and
// then. All methods are safe on a nil or "none" progress.
type progress struct {
	mode  string
	w     io.Writer
	fd    int // terminal to ask for the width; -1 if none
	every time.Duration

	cur   atomic.Pointer[writer.Progress]
	done  chan struct{}
	wg    sync.WaitGroup
	start time.Time

	mu         sync.Mutex // serialises drawing; guards the fields below
	last       string
	shown      string // phase of the last frame
	phaseStart time.Time
	segStart   time.Time // blocks are compressed from here on

	// archiveSize is the size of a tar input file, for the reading
	// phase's percentage (0: unknown, a pipe).
	archiveSize int64
}

// progressMode resolves the --progress default: on a terminal unicode (or
// ascii outside a UTF-8 locale), elsewhere none, as the reference does.
func progressMode(mode string, w io.Writer) string {
	if mode != "auto" {
		return mode
	}
	if terminalFd(w) < 0 {
		return "none"
	}
	for _, v := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if s := os.Getenv(v); s != "" {
			s = strings.ToLower(s)
			if strings.Contains(s, "utf-8") || strings.Contains(s, "utf8") {
				return "unicode"
			}
			return "ascii"
		}
	}
	return "ascii"
}

func terminalFd(w io.Writer) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return int(f.Fd())
	}
	return -1
}

func startProgress(mode string, w io.Writer) *progress {
	mode = progressMode(mode, w)
	p := &progress{mode: mode, w: w, fd: terminalFd(w),
		done: make(chan struct{}), start: time.Now(), every: 200 * time.Millisecond}
	if (mode == "ascii" || mode == "unicode") && p.fd < 0 {
		// A status line redrawn with \r is noise in a log or a pipe.
		p.mode = "none"
	}
	if p.mode == "none" {
		return p
	}
	if p.mode == "simple" {
		p.every = 2 * time.Second
	}
	p.wg.Add(1)
	go p.run()
	return p
}

func (p *progress) active() bool { return p != nil && p.mode != "none" }

func (p *progress) run() {
	defer p.wg.Done()
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			p.mu.Lock()
			if p.mode != "simple" && p.last != "" {
				io.WriteString(p.w, "\r\033[K")
			}
			p.mu.Unlock()
			return
		case <-t.C:
			p.draw()
		}
	}
}

// update is the writer.Target.Progress callback.
func (p *progress) update(s writer.Progress) {
	if !p.active() {
		return
	}
	old := p.cur.Swap(&s)
	if old == nil || old.Phase != s.Phase {
		// Every phase gets a frame, however short it is.
		p.draw()
	}
}

func (p *progress) stop() {
	if !p.active() {
		return
	}
	close(p.done)
	p.wg.Wait()
}

// status is one frame of the display.
type status struct {
	phase      string
	done, all  int64 // progress of the phase, in units of unit
	unit       string
	bytes      int64 // bytes processed in the phase, for the throughput
	current    string
	blocks     int
	blockBytes int64
}

func (p *progress) status() (status, bool) {
	wp := p.cur.Load()
	if wp == nil {
		return status{}, false
	}
	s := &wp.Stats
	st := status{phase: wp.Phase, current: s.Current, blocks: s.Blocks, blockBytes: s.BlockBytes}
	switch st.phase {
	case phaseReading:
		st.done, st.all, st.unit = s.ArchiveBytes, p.archiveSize, "bytes"
		st.bytes = s.ArchiveBytes
	case phaseScanning:
		st.done, st.all, st.unit = int64(s.FilesScanned), int64(s.FilesToScan), "files"
		st.bytes = s.ScannedBytes
	case phaseSegmenting:
		st.done, st.all, st.unit = s.SegmentedBytes, s.InputBytes, "bytes"
		st.bytes = s.SegmentedBytes
	case phaseCompressing:
		st.done, st.all, st.unit = int64(wp.Blocks), int64(wp.BlocksTotal), "blocks"
		if c := wp.BlocksCopied; c > 0 && wp.BlocksTotal > c {
			// An append: the copies take no time beside the new blocks,
			// so the share and the ETA are of the blocks compressed.
			st.done, st.all = int64(max(wp.Blocks-c, 0)), int64(wp.BlocksTotal-c)
		}
		st.bytes, st.current = wp.BlockBytes, ""
	case phaseWriting:
		st.current = ""
	}
	if st.phase != phaseScanning && st.phase != phaseWriting && s.Unchanged+s.Changed+s.New+s.Deleted > 0 {
		// An update: what it found, in place of the file last read.
		st.current = updateCounts(*s)
	}
	return st, true
}

func (p *progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.status()
	if !ok {
		return
	}
	now := time.Now()
	if st.phase != p.shown {
		p.shown, p.phaseStart = st.phase, now
		if st.phase == phaseSegmenting {
			p.segStart = now
		}
	}
	inPhase := now.Sub(p.phaseStart)
	if st.phase == phaseCompressing && !p.segStart.IsZero() {
		// The pipeline has been compressing since segmenting began.
		inPhase = now.Sub(p.segStart)
	}
	width := 80
	if w, _, err := term.GetSize(p.fd); err == nil && w > 0 {
		width = w
	}
	line := p.format(st, inPhase, now.Sub(p.start), width-1)
	if line == p.last {
		return // nothing changed: don't touch the terminal
	}
	p.last = line
	if p.mode == "simple" {
		io.WriteString(p.w, line+"\n")
		return
	}
	// One write: carriage return, the new text, then clear what is left of
	// the old one. Clearing first would make the line flicker.
	io.WriteString(p.w, "\r"+line+"\033[K")
}

// format renders a frame: phase, percentage, bar, throughput, ETA and the
// current file, in at most width characters: a wrapped line could not be
// redrawn in place, so the file name loses its start first.
func (p *progress) format(st status, inPhase, total time.Duration, width int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-11s", st.phase)
	if st.all > 0 {
		f := min(float64(st.done)/float64(st.all), 1)
		fmt.Fprintf(&b, " %3d%% %s", int(f*100), p.bar(f, 20))
		if st.bytes > 0 && inPhase > 0 {
			fmt.Fprintf(&b, " %9s/s", human(int64(float64(st.bytes)/inPhase.Seconds())))
		}
		if f > 0 && f < 1 && inPhase >= time.Second {
			eta := time.Duration(float64(inPhase) * (1 - f) / f)
			fmt.Fprintf(&b, " ETA %s", clock(eta))
		}
	} else if st.bytes > 0 {
		// A pipe: how much was read, and how fast.
		fmt.Fprintf(&b, " %9s", human(st.bytes))
		if inPhase > 0 {
			fmt.Fprintf(&b, " %9s/s", human(int64(float64(st.bytes)/inPhase.Seconds())))
		}
	}
	if st.blocks > 0 {
		fmt.Fprintf(&b, " %s %d blocks (%s)", p.sep(), st.blocks, human(st.blockBytes))
	}
	fmt.Fprintf(&b, " %s %s", p.sep(), clock(total))
	head := b.String()
	if st.current != "" {
		room := width - utf8.RuneCountInString(head) - 3
		if cur := []rune(st.current); room >= 8 {
			if len(cur) > room {
				cur = append([]rune("..."), cur[len(cur)-room+3:]...)
			}
			head += " " + p.sep() + " " + string(cur)
		}
	}
	return fit(head, width)
}

func (p *progress) sep() string {
	if p.mode == "unicode" {
		return "│"
	}
	return "|"
}

func (p *progress) bar(f float64, n int) string {
	full := int(f * float64(n))
	if p.mode == "unicode" {
		return "▕" + strings.Repeat("█", full) + strings.Repeat("░", n-full) + "▏"
	}
	return "[" + strings.Repeat("#", full) + strings.Repeat("-", n-full) + "]"
}

// fit cuts s to at most n characters.
func fit(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	if n < 4 {
		return string(r[:max(n, 0)])
	}
	return string(r[:n-3]) + "..."
}

func clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
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

// printSummary reports the build. head is what precedes the image in
// the output (--header, or the runtime of --runtime): the image's size
// and ratio leave it out, and it is reported after them.
func printSummary(w io.Writer, r *Result, head int64, headName string, d time.Duration) {
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
	if s.Unchanged+s.Changed+s.New+s.Deleted > 0 {
		fmt.Fprintf(w, "update: %s; dropped %d old blocks, rewrote %d; %s of the kept blocks dead\n",
			updateCounts(s), s.DroppedBlocks, s.RewrittenBlocks, human(s.DeadBytes))
	}
	if r.CopiedBlocks > 0 {
		fmt.Fprintf(w, "copied %d blocks (%s) from the input images", r.CopiedBlocks, human(r.CopiedBytes))
		if f := r.Fetched; f.Requests > 0 {
			fmt.Fprintf(w, "; fetched %s in %d requests (%d retried)", human(f.BytesFetched), f.Requests, f.Retries)
		}
		fmt.Fprintln(w)
	}
	blocks := "blocks"
	if r.CopiedBlocks > 0 {
		blocks = "new blocks"
	}
	image := r.ImageBytes - head
	var after string
	if head > 0 {
		after = fmt.Sprintf(", after a %s %s", human(head), headName)
	}
	fmt.Fprintf(w, "%s input (%s after removing duplicate files) -> %d %s, %s block data -> %s image (%s of the input)%s in %s\n",
		human(s.TreeBytes), human(s.InputBytes), s.Blocks, blocks, human(s.BlockBytes), human(image),
		ratio(image, s.TreeBytes), after, d.Round(time.Millisecond))
}

// ratio is the image size as a percentage of the input tree: the size of
// every regular file, hard links once, as du counts it.
func ratio(image, tree int64) string {
	if tree <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(image)/float64(tree))
}

// logWriter returns a writer for log lines that do not garble the status
// line: on a terminal it clears the line first, and the next tick draws
// it again below the message.
func (p *progress) logWriter() io.Writer { return progressLog{p} }

type progressLog struct{ p *progress }

func (l progressLog) Write(b []byte) (int, error) {
	p := l.p
	if !p.active() || p.mode == "simple" {
		return p.w.Write(b)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last != "" {
		io.WriteString(p.w, "\r\033[K")
		p.last = ""
	}
	return p.w.Write(b)
}

// updateCounts says what an update found.
func updateCounts(s dedup.Stats) string {
	return fmt.Sprintf("%d files unchanged, %d changed, %d new, %d deleted", s.Unchanged, s.Changed, s.New, s.Deleted)
}
