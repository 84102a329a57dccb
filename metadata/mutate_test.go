package metadata

import (
	"math/rand"
	"runtime/debug"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// cloneMD copies the tables the mutation tests modify.
func cloneMD(m *Metadata) *Metadata {
	c := *m
	c.Chunks = append([]Chunk(nil), m.Chunks...)
	c.Directories = append([]Directory(nil), m.Directories...)
	c.Inodes = append([]InodeData(nil), m.Inodes...)
	c.ChunkTable = append([]uint32(nil), m.ChunkTable...)
	c.EntryTableV22 = append([]uint32(nil), m.EntryTableV22...)
	c.SymlinkTable = append([]uint32(nil), m.SymlinkTable...)
	c.DirEntries = append([]DirEntry(nil), m.DirEntries...)
	c.SharedFilesTable = append([]uint32(nil), m.SharedFilesTable...)
	if m.Options != nil {
		o := *m.Options
		c.Options = &o
	}
	return &c
}

// TestNewFSMutations corrupts decoded tables directly, reaching NewFS and
// Check paths that byte-level corruption rarely hits; nothing may panic.
func TestNewFSMutations(t *testing.T) {
	var mds []*Metadata
	for _, s := range fuzzSeeds(nil) {
		md, err := Decode(s.schema, s.data)
		if err == nil {
			mds = append(mds, md)
		}
	}
	mds = append(mds, sampleMetadata())
	rng := rand.New(rand.NewSource(42))
	val := func() uint32 {
		switch rng.Intn(4) {
		case 0:
			return uint32(rng.Intn(4))
		case 1:
			return uint32(rng.Intn(64))
		case 2:
			return 0xFFFFFFFF - uint32(rng.Intn(3))
		}
		return rng.Uint32()
	}
	built := 0
	for i := 0; i < 5000; i++ {
		md := cloneMD(mds[rng.Intn(len(mds))])
		for k := 0; k < 1+rng.Intn(3); k++ {
			switch rng.Intn(14) {
			case 0:
				if len(md.Chunks) > 0 {
					c := &md.Chunks[rng.Intn(len(md.Chunks))]
					c.Block, c.Offset, c.Size = val(), val(), val()
				}
			case 1:
				if len(md.Directories) > 0 {
					d := &md.Directories[rng.Intn(len(md.Directories))]
					d.FirstEntry, d.ParentEntry, d.SelfEntry = val(), val(), val()
				}
			case 2:
				if len(md.Inodes) > 0 {
					in := &md.Inodes[rng.Intn(len(md.Inodes))]
					in.ModeIndex, in.OwnerIndex, in.NlinkMinusOne, in.InodeV22, in.NameIndexV22 = val(), val(), val(), val(), val()
				}
			case 3:
				if len(md.ChunkTable) > 0 {
					md.ChunkTable[rng.Intn(len(md.ChunkTable))] = val()
				}
			case 4:
				if len(md.DirEntries) > 0 {
					e := &md.DirEntries[rng.Intn(len(md.DirEntries))]
					e.InodeNum, e.NameIndex = val(), val()
				}
			case 5:
				if len(md.SharedFilesTable) > 0 {
					md.SharedFilesTable[rng.Intn(len(md.SharedFilesTable))] = val()
				}
			case 6:
				if md.Options == nil {
					md.Options = &FsOptions{}
				}
				o := md.Options
				o.PackedChunkTable, o.PackedDirectories, o.PackedSharedFilesTable = rng.Intn(2) == 0, rng.Intn(2) == 0, rng.Intn(2) == 0
				o.InodesHaveNlink = rng.Intn(2) == 0
			case 7:
				md.HoleBlockIndex = u32p(val())
				md.LargeHoleSize = []uint64{uint64(val())}
			case 8:
				if len(md.SymlinkTable) > 0 {
					md.SymlinkTable[rng.Intn(len(md.SymlinkTable))] = val()
				}
			case 9:
				if len(md.EntryTableV22) > 0 {
					md.EntryTableV22[rng.Intn(len(md.EntryTableV22))] = val()
				}
			case 10:
				md.BlockSize = val()
			case 11:
				md.HasSharedFilesTable = !md.HasSharedFilesTable
			case 12:
				if len(md.Modes) > 0 {
					md.Modes = append([]uint32(nil), md.Modes...)
					md.Modes[rng.Intn(len(md.Modes))] = val()
				}
			case 13:
				md.RegFileSizeCache = &InodeSizeCache{SizeLookup: []KV{{val(), uint64(val())}}, MinChunkCount: uint64(rng.Intn(3))}
			}
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v\n%s", r, debug.Stack())
				}
			}()
			if exercise(md, 2000) == nil {
				built++
			}
			if err := lazyAgrees(md); err != nil {
				t.Error(err)
			}
		}()
	}
	t.Logf("built %d", built)
}

// TestDecodeMutations flips, overwrites and truncates schema/data bytes of
// fixtures with a fixed seed; decoding must fail cleanly and quickly.
func TestDecodeMutations(t *testing.T) {
	seeds := fuzzSeeds(nil)
	if len(seeds) == 0 {
		fixtures.Require(t) // skips (or fails in CI) without the fixture images
		t.Fatal("no fixture image could be loaded as a seed")
	}
	rng := rand.New(rand.NewSource(1))
	mut := func(b []byte) []byte {
		d := append([]byte(nil), b...)
		switch rng.Intn(4) {
		case 0:
			for k := 0; k < 1+rng.Intn(8); k++ {
				d[rng.Intn(len(d))] ^= byte(1 << rng.Intn(8))
			}
		case 1:
			for k := 0; k < 1+rng.Intn(4); k++ {
				d[rng.Intn(len(d))] = byte(rng.Intn(256))
			}
		case 2:
			d = d[:rng.Intn(len(d))+1]
		case 3:
			i := rng.Intn(len(d))
			d[i] = 0xff
		}
		return d
	}
	var slowest time.Duration
	slowestAt := -1
	for i := 0; i < 3000; i++ {
		s := seeds[rng.Intn(len(seeds))]
		sc, da := s.schema, s.data
		if rng.Intn(3) == 0 {
			sc = mut(sc)
		} else {
			da = mut(da)
		}
		st := time.Now()
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v\n%s\nschema %x\ndata %x", r, debug.Stack(), sc, da)
				}
			}()
			md, err := Decode(sc, da)
			if err == nil {
				_ = exercise(md, 2000)
			}
		}()
		// A runaway decode shows up as the test's timeout; the slowest
		// case is logged rather than held to a clock, which a loaded
		// machine would make flaky.
		if d := time.Since(st); d > slowest {
			slowest, slowestAt = d, i
		}
	}
	t.Logf("slowest mutation: %d, %v", slowestAt, slowest)
}
