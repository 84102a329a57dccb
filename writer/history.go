package writer

import (
	"time"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/version"
	"github.com/godwarfs/godwarfs/metadata"
)

// History is the entry a written image gets in its HISTORY section. A
// rewritten image keeps the entries it had, in the same section, as the
// reference does.
type History struct {
	// Omit writes no new entry (mkdwarfs --no-history).
	Omit bool
	// Arguments is the command line recorded in the entry; nil records
	// none (--no-history-command-line).
	Arguments []string
	// NoTimestamp leaves out the time of writing (--no-history-timestamps).
	NoTimestamp bool
}

// writeHistory writes one HISTORY section, compressed with spec: the
// entries an input image had, then the new entry describing this build of
// godwarfs (see version.Info.HistoryRecord). Nothing is written when
// there are no entries.
func (c compressors) writeHistory(w *block.Writer, prior []metadata.HistoryRecord, h History, spec string, now func() time.Time) error {
	entries := prior
	if !h.Omit {
		var at *time.Time
		if !h.NoTimestamp {
			if now == nil {
				now = time.Now
			}
			t := now()
			at = &t
		}
		entries = append(entries, version.Get().HistoryRecord(h.Arguments, at))
	}
	if len(entries) == 0 {
		return nil
	}
	return c.writeSection(w, block.SectionHistory, spec, metadata.EncodeHistory(&metadata.History{Entries: entries}))
}
