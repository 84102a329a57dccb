package version

import (
	"strings"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/metadata"
)

func TestHistoryRecordHasEveryFieldTheReferenceReads(t *testing.T) {
	in := Get()
	now := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		args []string
		now  *time.Time
	}{{nil, nil}, {[]string{"mkdwarfs", "-i", "x"}, &now}} {
		rec := in.HistoryRecord(tc.args, tc.now)
		// Round-trip through the wire format, as the reference reads it.
		h, err := metadata.DecodeHistory(metadata.EncodeHistory(&metadata.History{Entries: []metadata.HistoryRecord{rec}}))
		if err != nil {
			t.Fatal(err)
		}
		got := h.Entries[0]
		v := got.Version
		if v.GitDesc == nil || *v.GitDesc != in.Name() || v.GitRev == nil || *v.GitRev == "" || v.GitBranch == nil || *v.GitBranch == "" {
			t.Errorf("version strings missing: %+v", v)
		}
		if got.SystemID != SystemID() || !strings.Contains(got.SystemID, " [") {
			t.Errorf("system id %q", got.SystemID)
		}
		if !strings.HasPrefix(got.CompilerID, "Go ") || !got.HasLibraryVersions {
			t.Errorf("compiler %q, libraries %v", got.CompilerID, got.LibraryVersions)
		}
		if got.HasArguments != (tc.args != nil) || (got.Timestamp != nil) != (tc.now != nil) {
			t.Errorf("arguments %v / timestamp %v, asked for %v / %v", got.Arguments, got.Timestamp, tc.args, tc.now)
		}
		if tc.now != nil && *got.Timestamp != 1700000000 {
			t.Errorf("timestamp %d", *got.Timestamp)
		}
	}
}

func TestHistoryVersionParts(t *testing.T) {
	for _, tc := range []struct {
		v                   string
		major, minor, patch uint16
		pseudo              bool
	}{
		{Base, 0, 1, 0, false},
		{"v1.22.3-rc.1", 1, 22, 3, false},
		{"v0.1.1-0.20261202194800-abcdefabcdef", 0, 1, 1, true},
		{"v0.0.0-20261202194800-abcdefabcdef", 0, 0, 0, true},
	} {
		ma, mi, pa := semver(tc.v)
		if ma != tc.major || mi != tc.minor || pa != tc.patch || isPseudo(tc.v) != tc.pseudo {
			t.Errorf("%s: %d.%d.%d pseudo %v", tc.v, ma, mi, pa, isPseudo(tc.v))
		}
	}
	if got := libName("github.com/klauspost/compress", "v1.20.4"); got != "klauspost/compress-1.20.4" {
		t.Errorf("libName = %q", got)
	}
	if got := libName("golang.org/x/sync", "v0.25.0"); got != "x/sync-0.25.0" {
		t.Errorf("libName = %q", got)
	}
}
