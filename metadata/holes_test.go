package metadata

import "testing"

func TestHoleEncoderFollowsTheReferenceRule(t *testing.T) {
	const bs = 1 << 20
	// Largest data chunk 1000 bytes: 10 bits, so inline holes are
	// limited to 2^(10+20)-1 bytes.
	e := NewHoleEncoder(7, bs, 1000)
	md := &Metadata{BlockSize: bs}
	for _, tc := range []struct {
		length uint64
		large  bool
	}{
		{0, false}, {1, false}, {bs + 5, false}, {1<<30 - 1, false},
		{1 << 30, true}, {5 << 40, true}, {1 << 30, true},
	} {
		c := e.Chunk(tc.length)
		if c.Block != 7 || (c.Offset == LargeHoleOffset) != tc.large {
			t.Errorf("length %d: chunk %+v, want large=%v", tc.length, c, tc.large)
		}
		md.LargeHoleSize = e.Sizes
		if n, err := md.HoleLength(c); err != nil || n != tc.length {
			t.Errorf("length %d: decoded %d, %v", tc.length, n, err)
		}
	}
	if len(e.Sizes) != 2 {
		t.Errorf("large hole sizes %v, want two distinct", e.Sizes)
	}
	if _, err := (&Metadata{}).HoleLength(Chunk{Offset: LargeHoleOffset, Size: 3}); err == nil {
		t.Error("out-of-range large hole index accepted")
	}
}

func TestSizeCache(t *testing.T) {
	hole := uint32(2)
	md := &Metadata{BlockSize: 16, HoleBlockIndex: &hole, Chunks: []Chunk{
		{Block: 0, Size: 5}, {Block: 1, Size: 7}, {Block: 2, Size: 2, Offset: 3}, // 5+7+35
		{Block: 0, Size: 1},
	}}
	c, err := md.SizeCache([]uint32{0, 3, 4}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.SizeLookup) != 1 || c.SizeLookup[0] != (KV{0, 47}) || len(c.AllocatedSizeLookup) != 1 || c.AllocatedSizeLookup[0] != (KV{0, 12}) {
		t.Errorf("size cache %+v", c)
	}
	if _, err := md.SizeCache([]uint32{0, 9}, 1); err == nil {
		t.Error("chunk table past the chunks accepted")
	}
}
