//go:build !windows && !(linux && (386 || arm))

package fusefs

import (
	"strconv"

	"github.com/godwarfs/godwarfs/source"
)

// The JSON xattr values are written by hand, as encoding/json would
// write them (jsonvalue_internal_test.go holds them to that): the
// reflection-driven encoder would be the largest part of the
// self-mounting runtime (cmd/dwarfs-run) after the Go runtime itself.

// appendJSON appends i as encoding/json marshals inodeInfo.
func (i inodeInfo) appendJSON(b []byte) []byte {
	b = append(b, `{"inode":`...)
	b = strconv.AppendUint(b, uint64(i.Inode), 10)
	b = append(b, `,"mode":`...)
	b = strconv.AppendUint(b, uint64(i.Mode), 10)
	b = append(b, `,"modestring":`...)
	b = appendJSONString(b, i.ModeString)
	b = append(b, `,"uid":`...)
	b = strconv.AppendUint(b, uint64(i.UID), 10)
	b = append(b, `,"gid":`...)
	b = strconv.AppendUint(b, uint64(i.GID), 10)
	b = append(b, `,"nlink":`...)
	b = strconv.AppendUint(b, uint64(i.Nlink), 10)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, i.Size, 10)
	b = append(b, `,"allocated_size":`...)
	b = strconv.AppendInt(b, i.Allocated, 10)
	if len(i.Chunks) > 0 {
		b = append(b, `,"chunks":[`...)
		for k, c := range i.Chunks {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if c.Block != nil {
				b = append(b, `"block":`...)
				b = strconv.AppendUint(b, uint64(*c.Block), 10)
				b = append(b, ',')
			}
			if c.Offset != nil {
				b = append(b, `"offset":`...)
				b = strconv.AppendUint(b, uint64(*c.Offset), 10)
				b = append(b, ',')
			}
			b = append(b, `"size":`...)
			b = strconv.AppendUint(b, c.Size, 10)
			if c.Hole {
				b = append(b, `,"hole":true`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// statsJSON is st as encoding/json marshals source.Stats.
func statsJSON(st source.Stats) []byte {
	b := make([]byte, 0, 256)
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"requests", st.Requests}, {"retries", st.Retries}, {"bytes_fetched", st.BytesFetched},
		{"mem_hits", st.MemHits}, {"disk_hits", st.DiskHits}, {"disk_misses", st.DiskMisses},
		{"disk_corrupt", st.DiskCorrupt}, {"disk_bytes", st.DiskBytes}, {"errors", st.Errors},
	} {
		b = append(b, ',', '"')
		b = append(b, f.name...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, f.v, 10)
	}
	b[0] = '{' // for the first comma
	return append(b, '}')
}

// appendJSONString appends s quoted as encoding/json quotes strings of
// valid UTF-8, HTML-safe (the mode strings it is given are ASCII).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
