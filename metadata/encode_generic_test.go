package metadata

import (
	"bytes"
	"fmt"
	"testing"
)

// genericThaw decodes frozen data into the generic value shape of the
// layout tree, independently of the Metadata model. Re-freezing the result
// isolates the layout algorithm from the model mapping.
type genericThaw struct {
	s    *Schema
	data []byte
}

func (g *genericThaw) readBits(bit, width int) (uint64, error) {
	if width == 0 {
		return 0, nil
	}
	if width > 64 || bit+width > len(g.data)*8 {
		return 0, fmt.Errorf("bit range %d+%d out of bounds", bit, width)
	}
	var v uint64
	for i := 0; i < width; i++ {
		p := bit + i
		v |= uint64(g.data[p>>3]>>(p&7)&1) << i
	}
	return v, nil
}

func (g *genericThaw) child(l *Layout, key int16, pos layoutPos) (*Layout, layoutPos) {
	if l == nil {
		return nil, pos
	}
	for _, f := range l.Fields {
		if f.ID == key {
			if f.Offset < 0 {
				return &g.s.Layouts[f.LayoutID], layoutPos{pos.start, pos.bit - int(f.Offset)}
			}
			return &g.s.Layouts[f.LayoutID], layoutPos{pos.start + int(f.Offset), pos.bit}
		}
	}
	return nil, pos
}

func (g *genericThaw) thaw(n *lnode, l *Layout, pos layoutPos) (fval, error) {
	switch n.kind {
	case lkInt, lkBool:
		if l == nil {
			return fval{}, nil
		}
		v, err := g.readBits(pos.start*8+pos.bit, int(l.Bits))
		return fval{u: v}, err
	case lkString, lkArray:
		dn, dl := g.child(l, 1, pos)
		dist, err := g.thaw(&lnode{kind: lkInt}, dn, dl)
		if err != nil {
			return fval{}, err
		}
		cn, cl := g.child(l, 2, pos)
		cnt, err := g.thaw(&lnode{kind: lkInt}, cn, cl)
		if err != nil {
			return fval{}, err
		}
		if cnt.u == 0 {
			if n.kind == lkString {
				return fval{}, nil
			}
			return fval{item: func(int) fval { return fval{} }}, nil
		}
		base := pos.start + int(dist.u)
		if n.kind == lkString {
			if base+int(cnt.u) > len(g.data) {
				return fval{}, fmt.Errorf("string out of bounds")
			}
			return fval{s: string(g.data[base : base+int(cnt.u)])}, nil
		}
		il, _ := g.child(l, 3, pos)
		items := make([]fval, cnt.u)
		for k := range items {
			ip := layoutPos{start: base}
			if il != nil {
				if il.Size > 0 {
					ip.start += k * int(il.Size)
				} else {
					ip.bit = k * int(il.Bits)
				}
			}
			if items[k], err = g.thaw(n.children[2].node, il, ip); err != nil {
				return fval{}, err
			}
		}
		return fval{n: len(items), item: func(k int) fval { return items[k] }}, nil
	case lkOptional:
		sl, sp := g.child(l, 1, pos)
		set, err := g.thaw(boolNode(), sl, sp)
		if err != nil || set.u == 0 {
			return fval{}, err
		}
		vl, vp := g.child(l, 2, pos)
		v, err := g.thaw(n.children[1].node, vl, vp)
		return fval{u: 1, f: []fval{v}}, err
	default:
		f := make([]fval, len(n.children))
		for i := range n.children {
			cl, cp := g.child(l, n.children[i].key, pos)
			var err error
			if f[i], err = g.thaw(n.children[i].node, cl, cp); err != nil {
				return fval{}, err
			}
		}
		return fval{f: f}, nil
	}
}

// TestLayoutGenericRoundTrip re-freezes every fixture's metadata through the
// generic value shape and requires byte-identical output for images of
// format >= 2.3.
func TestLayoutGenericRoundTrip(t *testing.T) {
	oldFormat := func(fi *fixtureImage) string {
		if fi.minor < 3 {
			return fmt.Sprintf("format 2.%d: old writers aligned items, no byte-exact check", fi.minor)
		}
		return ""
	}
	forEachFixtureWhere(t, oldFormat, func(t *testing.T, fi *fixtureImage) {
		s, err := DecodeSchema(fi.schema)
		if err != nil {
			t.Fatalf("DecodeSchema: %v", err)
		}
		g := &genericThaw{s: s, data: fi.data}
		v, err := g.thaw(metadataNode(), &s.Layouts[s.RootLayout], layoutPos{})
		if err != nil {
			t.Fatalf("thaw: %v", err)
		}
		root := metadataNode()
		data, err := freeze(root, v)
		if err != nil {
			t.Fatalf("freeze: %v", err)
		}
		ns, err := buildSchema(root)
		if err != nil {
			t.Fatalf("schema: %v", err)
		}
		if sb := EncodeSchemaOrder(ns, DetectSchemaOrder(fi.schema)); !bytes.Equal(sb, fi.schema) {
			t.Errorf("schema differs: got %d bytes, want %d (first diff at %d)", len(sb), len(fi.schema), firstDiff(sb, fi.schema))
		}
		if !bytes.Equal(data, fi.data) {
			t.Errorf("data differs: got %d bytes, want %d (first diff at %d)", len(data), len(fi.data), firstDiff(data, fi.data))
		}
	})
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
