package dwarfsck

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/writer"
)

// TestShardRecord checks that the summary shows a shard image's record,
// and only a shard image's.
func TestShardRecord(t *testing.T) {
	src := t.TempDir()
	for _, p := range []string{"a/x", "b/y", "c"} {
		if err := os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, p), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	build := func(name string, so *writer.ShardOptions) (string, *writer.BuildResult) {
		t.Helper()
		scan := dedup.DefaultOptions()
		scan.Input = src
		out := filepath.Join(dir, name)
		r, err := writer.Build(context.Background(), writer.BuildOptions{Target: writer.Target{Output: out,
			History: writer.History{Arguments: []string{"mkdwarfs"}}}, Scan: scan, Shard: so})
		if err != nil {
			t.Fatal(err)
		}
		return out, r
	}
	img, r := build("shard.dwarfs", &writer.ShardOptions{Index: 2, Count: 3})
	plain, _ := build("plain.dwarfs", nil)
	rc, out, errs := runck(img)
	if want := "shard: 2/3 plan " + r.Plan.Digest + "\n"; rc != 0 || !strings.Contains(out, want) {
		t.Errorf("shard: rc %d, %s%s; want %q", rc, out, errs, want)
	}
	rc, out, errs = runck("--json", img)
	var got struct {
		Shard struct {
			Index, Count int
			Digest       string `json:"plan_digest"`
		}
	}
	if err := json.Unmarshal([]byte(out), &got); rc != 0 || err != nil || got.Shard.Index != 2 || got.Shard.Count != 3 || got.Shard.Digest != r.Plan.Digest {
		t.Errorf("shard --json: rc %d, %v, %+v: %s%s", rc, err, got, out, errs)
	}
	rc, out, errs = runck(plain)
	if rc != 0 || strings.Contains(out, "shard:") {
		t.Errorf("not a shard: rc %d, %s%s", rc, out, errs)
	}
}
