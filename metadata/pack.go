package metadata

// Writer-side packing helpers (§3.14) and string table construction
// (§3.13). They are the inverses of the reader's unpacking.

// PackChunkTable delta-encodes an (unpacked, non-decreasing) chunk table,
// keeping the first element: stored[i] = ct[i] - ct[i-1]. Set
// FsOptions.PackedChunkTable when storing the result.
func PackChunkTable(ct []uint32) []uint32 {
	out := make([]uint32, len(ct))
	var prev uint32
	for i, v := range ct {
		out[i] = v - prev
		prev = v
	}
	return out
}

// PackDirectories returns the packed form of a directories table (including
// its sentinel): first_entry delta-encoded, parent_entry and self_entry
// zeroed, because readers rebuild them from dir_entries. Set
// FsOptions.PackedDirectories when storing the result.
func PackDirectories(dirs []Directory) []Directory {
	out := make([]Directory, len(dirs))
	var prev uint32
	for i, d := range dirs {
		out[i] = Directory{FirstEntry: d.FirstEntry - prev}
		prev = d.FirstEntry
	}
	return out
}

// PackSharedFiles run-length encodes an unpacked shared_files_table (sorted
// values 0..D-1 without gaps, each occurring at least twice) as count-2 per
// value, one entry per run. Input violating this is not representable (the
// reader rejects it too); a run shorter than two yields a wrapped count. Set
// FsOptions.PackedSharedFilesTable when storing the result.
func PackSharedFiles(unpacked []uint32) []uint32 {
	var out []uint32
	for i := 0; i < len(unpacked); {
		j := i
		for j < len(unpacked) && unpacked[j] == unpacked[i] {
			j++
		}
		out = append(out, uint32(j-i)-2)
		i = j
	}
	if out == nil {
		out = []uint32{}
	}
	return out
}

// BuildStringTable builds a compact string table (metadata #24/#25) holding
// strs in the given order. With packedIndex the index holds lengths instead
// of N+1 offsets. With useFSST the strings are FSST-compressed, but only if
// that makes buffer plus symbol table smaller than the raw buffer (upstream
// mkdwarfs' "auto" behaviour); otherwise the table is stored raw.
func BuildStringTable(strs []string, useFSST bool, packedIndex bool) *StringTable {
	var raw []byte
	for _, s := range strs {
		raw = append(raw, s...)
	}
	enc := strs
	var symtab []byte
	if useFSST && len(raw) > 0 {
		st := trainFSST(strs)
		cs := make([]string, len(strs))
		total := 0
		for i, s := range strs {
			cs[i] = string(st.encode(nil, []byte(s)))
			total += len(cs[i])
		}
		if tab := st.export(); total+len(tab) < len(raw) {
			enc, symtab = cs, tab
		}
	}
	t := &StringTable{Symtab: symtab, PackedIndex: packedIndex, Buffer: []byte{}}
	if packedIndex {
		t.Index = make([]uint32, 0, len(enc))
	} else {
		t.Index = make([]uint32, 0, len(enc)+1)
		t.Index = append(t.Index, 0)
	}
	for _, s := range enc {
		t.Buffer = append(t.Buffer, s...)
		if packedIndex {
			t.Index = append(t.Index, uint32(len(s)))
		} else {
			t.Index = append(t.Index, uint32(len(t.Buffer)))
		}
	}
	return t
}
