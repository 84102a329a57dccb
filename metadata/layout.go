package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
)

// This file implements the Frozen2 writer (§4.6): a layout tree mirroring
// the thrift types, the fixed-point layout passes, freezing into bytes and
// emitting the schema. It follows the upstream (fbthrift) algorithm step by
// step because byte-identical output is what makes it testable against
// real images.

type lkind uint8

const (
	lkInt lkind = iota
	lkBool
	lkString
	lkArray // list, set and map (map items are pairs)
	lkPair
	lkOptional
	lkStruct
)

// lnode is one layout node. A node is shared by all values of its position
// in the type tree (e.g. one item node for all list elements).
type lnode struct {
	kind     lkind
	maxBits  int // integers: width of the C++ type
	size     int // bytes when not inlined
	bits     int
	inlined  bool
	children []lchild
	// itemsLaid records that this array's items were laid out in an
	// earlier pass; see lay.
	itemsLaid bool
	// wholeBytes (integers) rounds the width up to whole bytes; see
	// EncodeOptions.WholeBytes.
	wholeBytes bool
}

// lchild is a sub-component of a node with its placement within the parent.
// For arrays the children are distance(1), count(2), item(3); for strings
// distance(1), count(2); for optionals isset(1), value(2).
type lchild struct {
	key  int16
	node *lnode
	off  int // byte offset (used when bit == 0)
	bit  int // bit offset
}

// fieldPos is fbthrift's FieldPosition: a running (byte, bit) cursor inside
// a layout.
type fieldPos struct{ off, bit int }

// layoutPos is fbthrift's LayoutPosition: the byte origin used for
// out-of-line distances plus a bit offset that may exceed 7.
type layoutPos struct{ start, bit int }

// fval is a thrift value in the generic shape the layout code walks.
// ints/bools use u; strings s; arrays n and item; structs and pairs f (in
// declaration order) or, to avoid an allocation per array element, field
// applied to idx; optionals u (isset) and f[0].
type fval struct {
	u     uint64
	s     string
	n     int
	item  func(int) fval
	f     []fval
	idx   int
	field func(idx, i int) fval
}

// child returns struct/pair component i (in declaration order).
func (v *fval) child(i int) fval {
	if v.field != nil {
		return v.field(v.idx, i)
	}
	return v.f[i]
}

func (n *lnode) empty() bool { return n.size == 0 && n.bits == 0 }

func (n *lnode) start() fieldPos {
	if n.inlined {
		return fieldPos{}
	}
	return fieldPos{off: (n.bits + 7) / 8}
}

func (n *lnode) grow(after fieldPos, inlineWanted bool) bool {
	n.inlined = n.size == 0 && inlineWanted
	changed := false
	if !n.inlined && after.off > n.size {
		n.size = after.off
		changed = true
	}
	if after.bit > n.bits {
		n.bits = after.bit
		changed = true
	}
	return changed
}

// setWholeBytes marks every integer below n (see EncodeOptions.WholeBytes).
func (n *lnode) setWholeBytes() {
	if n.kind == lkInt {
		n.wholeBytes = true
	}
	for _, c := range n.children {
		c.node.setWholeBytes()
	}
}

// Node constructors, one per thrift type shape.

func intNode(width int) *lnode { return &lnode{kind: lkInt, maxBits: width} }
func boolNode() *lnode         { return &lnode{kind: lkBool, maxBits: 1} }

func strNode() *lnode {
	return &lnode{kind: lkString, children: []lchild{
		{key: 1, node: intNode(64)}, {key: 2, node: intNode(64)},
	}}
}

func arrayNode(item *lnode) *lnode {
	return &lnode{kind: lkArray, children: []lchild{
		{key: 1, node: intNode(64)}, {key: 2, node: intNode(64)}, {key: 3, node: item},
	}}
}

func pairNode(k, v *lnode) *lnode {
	return &lnode{kind: lkPair, children: []lchild{{key: 1, node: k}, {key: 2, node: v}}}
}

func optNode(v *lnode) *lnode {
	return &lnode{kind: lkOptional, children: []lchild{{key: 1, node: boolNode()}, {key: 2, node: v}}}
}

type fieldDef struct {
	key  int16
	node *lnode
}

// structNode takes the fields in IDL declaration order, which decides the
// placement order.
func structNode(fields ...fieldDef) *lnode {
	n := &lnode{kind: lkStruct}
	for _, f := range fields {
		n.children = append(n.children, lchild{key: f.key, node: f.node})
	}
	return n
}

// layouter runs one layout pass.
type layouter struct {
	cursor  int
	changed bool
	inArray int // depth of enclosing array items
}

// fixedWidth reports whether a subtree holds only integers and bools. Such a
// subtree never reserves storage, so laying it out once over all values
// already reaches its final widths and placements.
func (n *lnode) fixedWidth() bool {
	if n.kind == lkString || n.kind == lkArray {
		return false
	}
	for i := range n.children {
		if !n.children[i].node.fixedWidth() {
			return false
		}
	}
	return true
}

// reserve books nbytes of out-of-line storage and returns its distance
// from origin.
func (l *layouter) reserve(origin, nbytes int) int {
	if nbytes == 0 {
		return 0
	}
	if origin > l.cursor {
		l.cursor = origin
	}
	d := l.cursor - origin
	l.cursor += nbytes
	return d
}

func (l *layouter) place(parent layoutPos, cur fieldPos, c *lchild, v fval) fieldPos {
	next := cur
	n := c.node
	if n.size == 0 {
		// Try bit-inlining first; only values that need bytes fall through.
		after := l.lay(n, v, layoutPos{parent.start, parent.bit + cur.bit})
		if after.off == 0 {
			if n.grow(after, true) {
				l.changed = true
			}
			if !n.empty() {
				c.off, c.bit = 0, cur.bit
				next.bit += n.bits
			}
			return next
		}
	}
	after := l.lay(n, v, layoutPos{parent.start + cur.off, parent.bit})
	if n.grow(after, false) {
		l.changed = true
	}
	if !n.empty() {
		c.off, c.bit = cur.off, 0
		next.off += n.size
	}
	return next
}

func intVal(x int) fval { return fval{u: uint64(x)} }

// placeInt places a distance, count or isset value.
func (l *layouter) placeInt(parent layoutPos, cur fieldPos, c *lchild, x int) fieldPos {
	return l.place(parent, cur, c, fval{u: uint64(x)})
}

func (l *layouter) lay(n *lnode, v fval, pos layoutPos) fieldPos {
	p := n.start()
	switch n.kind {
	case lkInt:
		if v.u != 0 {
			w := bits.Len64(v.u)
			if n.wholeBytes {
				w = min((w+7)/8*8, n.maxBits)
			}
			p.bit += w
		}
	case lkBool:
		if v.u != 0 {
			p.bit++
		}
	case lkString:
		ln := len(v.s)
		if ln == 0 {
			return p
		}
		d := l.reserve(pos.start, ln)
		p = l.placeInt(pos, p, &n.children[0], d)
		p = l.placeInt(pos, p, &n.children[1], ln)
	case lkArray:
		cnt := v.n
		p = l.placeInt(pos, p, &n.children[1], cnt)
		if cnt == 0 {
			return l.placeInt(pos, p, &n.children[0], 0)
		}
		ib, ibits := itemStride(n.children[2].node)
		d := l.reserve(pos.start, arrayBytes(cnt, ib, ibits))
		p = l.placeInt(pos, p, &n.children[0], d)
		// Re-laying fixed-width items in later passes cannot change
		// anything (widths are maxima over all items), so it is skipped;
		// the output is the same as upstream's, only faster. This is only
		// valid for an array laid once per pass, i.e. not nested in items.
		itemNode := n.children[2].node
		if l.inArray == 0 && n.itemsLaid && itemNode.fixedWidth() {
			return p
		}
		l.inArray++
		for k := 0; k < cnt; k++ {
			l.place(layoutPos{pos.start + d + k*ib, k * ibits}, fieldPos{}, &n.children[2], v.item(k))
		}
		l.inArray--
		if l.inArray == 0 {
			n.itemsLaid = true
		}
	case lkOptional:
		p = l.placeInt(pos, p, &n.children[0], int(v.u))
		if v.u != 0 {
			p = l.place(pos, p, &n.children[1], v.f[0])
		}
	case lkStruct, lkPair:
		for i := range n.children {
			p = l.place(pos, p, &n.children[i], v.child(i))
		}
	}
	return p
}

// itemStride returns the per-item byte and bit step of an array: items are
// either byte-sized (size > 0) or bit-packed.
func itemStride(item *lnode) (ib, ibits int) {
	if item.size > 0 {
		return item.size, 0
	}
	return 0, item.bits
}

func arrayBytes(n, ib, ibits int) int { return n*ib + (n*ibits+7)/8 }

// maxLayoutPasses mirrors upstream's bound; real metadata needs < 10.
const maxLayoutPasses = 1000

// layoutRoot runs layout passes to the fixed point and returns the number
// of bytes of the frozen data excluding the trailing padding.
func layoutRoot(root *lnode, v fval) (int, error) {
	for range maxLayoutPasses {
		l := &layouter{cursor: root.size}
		after := l.lay(root, v, layoutPos{})
		if root.grow(after, false) {
			l.changed = true
		}
		if !l.changed {
			return l.cursor, nil
		}
	}
	return 0, errors.New("metadata: frozen layout did not converge")
}

// freezer writes values into the final buffer with sequential allocation.
type freezer struct {
	buf  []byte
	used int
}

func (fz *freezer) alloc(n int) (int, error) {
	o := fz.used
	if n > len(fz.buf)-o {
		return 0, errors.New("metadata: frozen data exceeds layout size")
	}
	fz.used += n
	return o, nil
}

// putBits ORs a little-endian bit field into the zeroed buffer.
func (fz *freezer) putBits(bitPos int, width int, v uint64) {
	for width > 0 {
		i, sh := bitPos>>3, bitPos&7
		take := min(8-sh, width)
		fz.buf[i] |= byte((v & (1<<take - 1)) << sh)
		v >>= take
		bitPos += take
		width -= take
	}
}

func childPos(pos layoutPos, c *lchild) layoutPos {
	return layoutPos{pos.start + c.off, pos.bit + c.bit}
}

func (fz *freezer) write(n *lnode, v fval, pos layoutPos) error {
	switch n.kind {
	case lkInt, lkBool:
		if w := bits.Len64(v.u); w > n.bits {
			return fmt.Errorf("metadata: value %d needs %d bits, layout has %d", v.u, w, n.bits)
		}
		if n.bits > 0 {
			fz.putBits(pos.start*8+pos.bit, n.bits, v.u)
		}
	case lkString:
		ln, d := len(v.s), 0
		if ln > 0 {
			o, err := fz.alloc(ln)
			if err != nil {
				return err
			}
			copy(fz.buf[o:], v.s)
			d = o - pos.start
		}
		if err := fz.write(n.children[0].node, intVal(d), childPos(pos, &n.children[0])); err != nil {
			return err
		}
		return fz.write(n.children[1].node, intVal(ln), childPos(pos, &n.children[1]))
	case lkArray:
		cnt := v.n
		if err := fz.write(n.children[1].node, intVal(cnt), childPos(pos, &n.children[1])); err != nil {
			return err
		}
		item := n.children[2].node
		ib, ibits := itemStride(item)
		nbytes := 0
		if cnt > 0 {
			nbytes = arrayBytes(cnt, ib, ibits)
		}
		o, d := 0, 0
		if nbytes > 0 {
			var err error
			if o, err = fz.alloc(nbytes); err != nil {
				return err
			}
			d = o - pos.start
		}
		if err := fz.write(n.children[0].node, intVal(d), childPos(pos, &n.children[0])); err != nil {
			return err
		}
		for k := 0; k < cnt; k++ {
			if err := fz.write(item, v.item(k), layoutPos{o + k*ib, k * ibits}); err != nil {
				return err
			}
		}
	case lkOptional:
		if err := fz.write(n.children[0].node, intVal(int(v.u)), childPos(pos, &n.children[0])); err != nil {
			return err
		}
		if v.u != 0 {
			return fz.write(n.children[1].node, v.f[0], childPos(pos, &n.children[1]))
		}
	case lkStruct, lkPair:
		for i := range n.children {
			c := &n.children[i]
			if err := fz.write(c.node, v.child(i), childPos(pos, c)); err != nil {
				return err
			}
		}
	}
	return nil
}

// freezePadding is required by the C++ reader, which loads 8-byte words.
const freezePadding = 8

// freeze lays out and serialises v, returning the METADATA_V2 payload.
func freeze(root *lnode, v fval) ([]byte, error) {
	total, err := layoutRoot(root, v)
	if err != nil {
		return nil, err
	}
	if err := checkWidths(root); err != nil {
		return nil, err
	}
	fz := &freezer{buf: make([]byte, total+freezePadding)}
	start, err := fz.alloc(root.size)
	if err != nil {
		return nil, err
	}
	if err := fz.write(root, v, layoutPos{start: start}); err != nil {
		return nil, err
	}
	if _, err := fz.alloc(freezePadding); err != nil {
		return nil, err
	}
	if fz.used != len(fz.buf) {
		return nil, fmt.Errorf("metadata: frozen %d bytes, layout reserved %d", fz.used, len(fz.buf))
	}
	return fz.buf, nil
}

// checkWidths rejects integer layouts wider than their C++ type, which the
// upstream reader refuses.
func checkWidths(n *lnode) error {
	if (n.kind == lkInt || n.kind == lkBool) && n.bits > n.maxBits {
		return fmt.Errorf("metadata: field needs %d bits, type allows %d", n.bits, n.maxBits)
	}
	for i := range n.children {
		if err := checkWidths(n.children[i].node); err != nil {
			return err
		}
	}
	return nil
}

// schemaBuilder interns layout records; children are interned before their
// parents, so leaves get the low ids like upstream.
type schemaBuilder struct {
	layouts []Layout
	index   map[string]int16
}

func layoutKey(l *Layout) string {
	b := make([]byte, 0, 8+6*len(l.Fields))
	b = binary.AppendVarint(b, int64(l.Size))
	b = binary.AppendVarint(b, int64(l.Bits))
	for _, f := range l.Fields {
		b = binary.AppendVarint(b, int64(f.ID))
		b = binary.AppendVarint(b, int64(f.LayoutID))
		b = binary.AppendVarint(b, int64(f.Offset))
	}
	return string(b)
}

func (sb *schemaBuilder) intern(l Layout) (int16, error) {
	k := layoutKey(&l)
	if id, ok := sb.index[k]; ok {
		return id, nil
	}
	if len(sb.layouts) >= math.MaxInt16 {
		return 0, errors.New("metadata: too many frozen layouts")
	}
	id := int16(len(sb.layouts))
	sb.layouts = append(sb.layouts, l)
	sb.index[k] = id
	return id, nil
}

func (sb *schemaBuilder) save(n *lnode) (Layout, error) {
	if n.size > math.MaxInt32 || n.bits > math.MaxInt16 {
		return Layout{}, fmt.Errorf("metadata: layout too large (%d bytes, %d bits)", n.size, n.bits)
	}
	r := Layout{Size: int32(n.size), Bits: int16(n.bits)}
	for i := range n.children {
		c := &n.children[i]
		if c.node.empty() {
			continue // zero-width components are omitted from the schema
		}
		sub, err := sb.save(c.node)
		if err != nil {
			return Layout{}, err
		}
		id, err := sb.intern(sub)
		if err != nil {
			return Layout{}, err
		}
		off := c.off
		if c.bit != 0 {
			off = -c.bit
		}
		if off < math.MinInt16 || off > math.MaxInt16 {
			return Layout{}, fmt.Errorf("metadata: field offset %d out of range", off)
		}
		r.Fields = append(r.Fields, Field{ID: c.key, LayoutID: id, Offset: int16(off)})
	}
	sort.Slice(r.Fields, func(i, j int) bool { return r.Fields[i].ID < r.Fields[j].ID })
	return r, nil
}

// buildSchema emits the schema of a laid-out tree.
func buildSchema(root *lnode) (*Schema, error) {
	sb := &schemaBuilder{index: map[string]int16{}}
	r, err := sb.save(root)
	if err != nil {
		return nil, err
	}
	id, err := sb.intern(r)
	if err != nil {
		return nil, err
	}
	return &Schema{FileVersion: 1, RelaxTypeChecks: true, Layouts: sb.layouts, RootLayout: id}, nil
}
