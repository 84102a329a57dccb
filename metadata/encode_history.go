package metadata

// EncodeHistory serialises a HISTORY section payload (thrift/history.thrift,
// §1.8) in the compact protocol, fields in declaration (= id) order and
// optional fields only when set, as fbthrift does. The u16/u64 fields are
// thrift i16/i64 on the wire, so they are reinterpreted as signed.
func EncodeHistory(h *History) []byte {
	w := &compactWriter{}
	w.structBegin()
	w.fieldBegin(ctList, 1)
	w.listBegin(ctStruct, len(h.Entries))
	for i := range h.Entries {
		writeHistoryRecord(w, &h.Entries[i])
	}
	w.structEnd()
	return w.bytes()
}

func writeHistoryRecord(w *compactWriter, e *HistoryRecord) {
	w.structBegin()
	w.fieldBegin(ctStruct, 1)
	writeDwarfsVersion(w, &e.Version)
	w.fieldBegin(ctBinary, 2)
	w.str(e.SystemID)
	w.fieldBegin(ctBinary, 3)
	w.str(e.CompilerID)
	if e.HasArguments {
		w.fieldBegin(ctList, 4)
		writeStringList(w, e.Arguments)
	}
	if e.Timestamp != nil {
		w.fieldBegin(ctI64, 5)
		w.i64(int64(*e.Timestamp))
	}
	if e.HasLibraryVersions {
		w.fieldBegin(ctSet, 6)
		writeStringList(w, e.LibraryVersions)
	}
	w.structEnd()
}

func writeDwarfsVersion(w *compactWriter, v *DwarfsVersion) {
	w.structBegin()
	w.fieldBegin(ctI16, 1)
	w.i16(int16(v.Major))
	w.fieldBegin(ctI16, 2)
	w.i16(int16(v.Minor))
	w.fieldBegin(ctI16, 3)
	w.i16(int16(v.Patch))
	w.boolField(4, v.IsRelease)
	for i, s := range []*string{v.GitRev, v.GitBranch, v.GitDesc} {
		if s != nil {
			w.fieldBegin(ctBinary, int16(5+i))
			w.str(*s)
		}
	}
	w.structEnd()
}

// writeStringList writes list and set bodies (same wire form). Set order is
// the caller's: the decoder keeps the stored order, which keeps re-encoding
// byte-identical.
func writeStringList(w *compactWriter, s []string) {
	w.listBegin(ctBinary, len(s))
	for _, x := range s {
		w.str(x)
	}
}
