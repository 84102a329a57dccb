package dedup

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/dedup/formats"
	"github.com/godwarfs/godwarfs/metadata"
)

// Category names as they appear in an image's metadata (category_names).
const (
	CategoryDefault        = "<default>"
	CategoryIncompressible = "incompressible"
	CategoryHotness        = "hotness"
)

// Categorizers lists the categorizers godwarfs implements (--categorize),
// which are the reference's.
var Categorizers = []string{"binary", "fits", "hotness", "incompressible", "pcmaudio"}

// ReferenceCategories are the categories the reference mkdwarfs's
// categorizers emit. Per-category options may name any of them, as with
// the reference: those of categorizers that are not enabled are ignored.
var ReferenceCategories = []string{
	"binary/elf", "binary/pe", "binary/macho-header", "binary/macho-section",
	"fits/metadata", "fits/image", "hotness", "incompressible",
	"pcmaudio/metadata", "pcmaudio/waveform",
}

// CategoriesOf returns the categories of the named categorizers, in the
// order the reference numbers them.
func CategoriesOf(categorizers []string) []string {
	var out []string
	for _, name := range categorizers {
		for k := range numKinds {
			if kindOwner[k] == name {
				out = append(out, kindNames[k])
			}
		}
	}
	return out
}

// catKind is a category without its subcategory.
type catKind uint8

const (
	kDefault catKind = iota
	kIncompressible
	kHotness
	kPCMMetadata
	kPCMWaveform
	kFITSMetadata
	kFITSImage
	kELF
	kPE
	kMachOHeader
	kMachOSection
	numKinds
)

// kindNames names the kinds; each categorizer's kinds are listed in the
// order the reference numbers its categories.
var kindNames = [numKinds]string{CategoryDefault, CategoryIncompressible, CategoryHotness,
	formats.PCMMetadata, formats.PCMWaveform, formats.FITSMetadata, formats.FITSImage,
	formats.BinaryELF, formats.BinaryPE, formats.MachOHeader, formats.MachOSection}

// kindOwner names the categorizer that emits each kind.
var kindOwner = [numKinds]string{"", CategoryIncompressible, CategoryHotness, formats.PCMAudio, formats.PCMAudio,
	formats.FITS, formats.FITS, formats.BinaryFormats, formats.BinaryFormats, formats.BinaryFormats, formats.BinaryFormats}

func catKindOf(name string) (catKind, bool) {
	for k, n := range kindNames {
		if n == name {
			return catKind(k), true
		}
	}
	return 0, false
}

// category is a kind and a subcategory: the data whose blocks are kept
// apart. The default category is the zero value, as in the reference's
// category manager.
type category struct {
	kind catKind
	sub  uint32 // 0: none; n: subcategory n-1 of the categorizers' store
}

func (c category) name() string { return kindNames[c.kind] }

// prefix is the reference's log prefix for a category: its name and
// subcategory number (numbered per kind, in the order first found).
func (cz *categorizers) prefix(c category) string {
	if cz != nil && c.sub > 0 && int(c.sub) <= len(cz.subOrd) {
		return fmt.Sprintf("[%s/%d] ", c.name(), cz.subOrd[c.sub-1])
	}
	return "[" + c.name() + "] "
}

var (
	catDefault        = category{kind: kDefault}
	catIncompressible = category{kind: kIncompressible}
	catHotness        = category{kind: kHotness}
)

// checkCategorize validates Options.Categorize.
func (opt *Options) checkCategorize() error {
	for i, name := range opt.Categorize {
		if !slices.Contains(Categorizers, name) {
			return fmt.Errorf("unknown categorizer %q (supported: %s)", name, strings.Join(Categorizers, ", "))
		}
		if slices.Contains(opt.Categorize[:i], name) {
			return fmt.Errorf("categorizer %q given twice", name)
		}
	}
	return nil
}

// categorizerIndex returns the position of the named categorizer in
// opt.Categorize, or -1 when it is not enabled.
func (opt *Options) categorizerIndex(name string) int {
	return slices.Index(opt.Categorize, name)
}

// rank numbers kinds as the reference numbers categories: the default
// category first, then each categorizer's in --categorize order. It breaks
// ties between equally large categories in category_names.
func (opt *Options) rank(c category) int {
	if c.kind == kDefault {
		return 0
	}
	n := 1
	for _, name := range opt.Categorize {
		for k := range numKinds {
			if kindOwner[k] != name {
				continue
			}
			if k == c.kind {
				return n
			}
			n++
		}
	}
	return n
}

// HotnessOptions hold the hotness categorizer's list: the files whose data
// goes into the hotness category, so that it is stored together and a
// mount can preload it (the dwarfs driver's analysis_file and
// preload_category options).
type HotnessOptions struct {
	// Paths are slash-separated and relative to Input, as
	// ReadHotnessList returns them.
	Paths []string
}

// ReadHotnessList reads a hotness list as the reference mkdwarfs does: one
// path a line, relative to the input directory, leading slashes ignored
// (so the dwarfs driver's analysis_file, which lists paths from the mount
// root, can be used as it is). Paths are not otherwise normalised; a path
// that names no file is ignored. Empty lines are skipped; a path listed
// twice is an error.
func ReadHotnessList(r io.Reader) ([]string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	paths := []string{}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		p := strings.TrimLeft(line, "/")
		if p == "" {
			continue
		}
		if seen[p] {
			return nil, fmt.Errorf("duplicate path in hotness list: '%s'", line)
		}
		seen[p] = true
		paths = append(paths, p)
	}
	return paths, nil
}

// IncompressibleOptions configure the incompressible categorizer
// (--incompressible-*): data is compressed with a fast zstd level in
// blocks of BlockSize bytes, and a file (or, with Fragments, each block) is
// incompressible when the output is at least Ratio times the input.
type IncompressibleOptions struct {
	MinInputSize int64 // files below this size are not examined
	BlockSize    int
	Fragments    bool
	Ratio        float64
	ZstdLevel    int
}

// DefaultIncompressible returns the reference mkdwarfs defaults.
func DefaultIncompressible() IncompressibleOptions {
	return IncompressibleOptions{MinInputSize: 256, BlockSize: 1 << 20, Ratio: 0.99, ZstdLevel: -1}
}

// CategoryOptions override the segmenter and order settings for the data
// of one category (mkdwarfs's CATEGORY::VALUE option syntax); nil fields
// keep the global setting.
type CategoryOptions struct {
	Order          *Order
	Nilsimsa       *NilsimsaOptions // with Order
	ExplicitOrder  []string         // with Order
	WindowBits     *int
	WindowStep     *int
	Lookback       *int
	BloomSizeShift *int
}

// forCategory returns opt with the overrides for the named category applied.
func (opt *Options) forCategory(name string) *Options {
	o := *opt
	co, ok := opt.PerCategory[name]
	if !ok {
		return &o
	}
	if co.Order != nil {
		o.Order = *co.Order
		o.ExplicitOrder = co.ExplicitOrder
		if co.Nilsimsa != nil {
			o.Nilsimsa = *co.Nilsimsa
		}
	}
	for _, p := range []struct{ dst, src *int }{{&o.WindowBits, co.WindowBits}, {&o.WindowStep, co.WindowStep},
		{&o.Lookback, co.Lookback}, {&o.BloomSizeShift, co.BloomSizeShift}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	return &o
}

// fragment is a run of a file's logical bytes in one category.
type fragment struct {
	cat  category
	size int64
}

// newProbe returns the compressor the incompressible categorizer measures
// with: zstd at the configured level, clamped to what this build's
// encoder has (pure-Go builds have no negative levels).
func newProbe(io *IncompressibleOptions) (encode.Compressor, error) {
	lo, hi := encode.ZstdLevels()
	lvl := min(max(io.ZstdLevel, lo), hi)
	c, err := encode.NewCompressor(fmt.Sprintf("zstd:level=%d", lvl))
	if err != nil {
		return nil, fmt.Errorf("incompressible categorizer: %w", err)
	}
	return c, nil
}

// extentCat categorizes one data extent (the whole file unless the file
// is sparse): the data is cut into BlockSize pieces, each compressed.
type extentCat struct {
	opt      *IncompressibleOptions
	probe    encode.Compressor
	buf      []byte
	in, out  int64
	blocks   int
	frags    []fragment // with Fragments: per block, merged
	firstErr error
}

func (e *extentCat) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), e.opt.BlockSize-len(e.buf))
		e.buf = append(e.buf, p[:k]...)
		p = p[k:]
		if len(e.buf) == e.opt.BlockSize {
			e.compress()
		}
	}
	return n, nil
}

func (e *extentCat) compress() {
	size := len(e.buf)
	out, err := e.probe.Compress(e.buf)
	if err != nil && e.firstErr == nil {
		e.firstErr = err
	}
	e.in += int64(size)
	e.out += int64(len(out))
	e.blocks++
	cat := catDefault
	if float64(len(out)) >= e.opt.Ratio*float64(size) {
		cat = catIncompressible
	}
	if e.opt.Fragments {
		e.frags = appendFragment(e.frags, fragment{cat, int64(size)})
	}
	e.buf = e.buf[:0]
}

// result ends the extent. With Fragments it returns the per-block
// fragments; otherwise one fragment for the extent, which is left out
// when it is the default category and single is false.
func (e *extentCat) result(single bool) []fragment {
	if len(e.buf) > 0 {
		e.compress()
	}
	if e.opt.Fragments || e.in == 0 {
		return e.frags
	}
	cat := catDefault
	if e.blocks > 0 && float64(e.out) >= e.opt.Ratio*float64(e.in) {
		cat = catIncompressible
	}
	if !single && cat == catDefault {
		return nil
	}
	return []fragment{{cat, e.in}}
}

func appendFragment(fs []fragment, f fragment) []fragment {
	if n := len(fs); n > 0 && fs[n-1].cat == f.cat {
		fs[n-1].size += f.size
		return fs
	}
	return append(fs, f)
}

// fileCat categorizes one file as the reference does: each data extent
// on its own, holes in the default category. It is an io.Writer for the
// file's data, with hole called between extents.
type fileCat struct {
	cur   extentCat
	frags []fragment
}

func newFileCat(opt *IncompressibleOptions, probe encode.Compressor) *fileCat {
	return &fileCat{cur: extentCat{opt: opt, probe: probe}}
}

func (f *fileCat) Write(p []byte) (int, error) { return f.cur.Write(p) }

func (f *fileCat) hole(n int64) {
	f.frags = append(f.frags, f.cur.result(true)...)
	f.frags = append(f.frags, fragment{catDefault, n})
	f.cur = extentCat{opt: f.cur.opt, probe: f.cur.probe, buf: f.cur.buf[:0], firstErr: f.cur.firstErr}
}

// result returns the file's fragments; nil means the whole file is in the
// default category. claimed says whether the categorizer claimed the file
// as the reference's does, which decides whether a categorizer after it
// in --categorize gets it: in whole-file mode only when some of it is
// incompressible or the file has holes; with Fragments, any file it read.
func (f *fileCat) result() (frags []fragment, claimed bool, err error) {
	f.frags = append(f.frags, f.cur.result(len(f.frags) > 0)...)
	if f.cur.firstErr != nil {
		return nil, false, f.cur.firstErr
	}
	if len(f.frags) == 1 && f.frags[0].cat == catDefault {
		return nil, true, nil
	}
	return f.frags, len(f.frags) > 0, nil
}

// categorizers runs the enabled categorizers on the files as they are
// scanned.
type categorizers struct {
	order    []string // --categorize
	inc      *IncompressibleOptions
	probe    encode.Compressor // nil: no incompressible categorizer
	incIdx   int               // position of incompressible in order
	hotness  bool              // the hotness categorizer is enabled
	hotIdx   int
	detect   bool                                      // a format categorizer (pcmaudio, fits, binary) is enabled
	accept   func(category, metadataJSON string) error // Options.AcceptCategory
	subsMu   sync.Mutex
	logMu    sync.Mutex
	subIndex map[subKey]uint32
	subs     []formats.Sub // subcategory n is subs[n-1]
	subOrd   []uint32      // per subcategory: its number within its kind, for log prefixes
	kindSubs [numKinds]uint32
}

// subKey identifies a subcategory of a kind.
type subKey struct {
	kind catKind
	key  [6]uint64
}

// addSub returns the subcategory number of s in kind k.
func (cz *categorizers) addSub(k catKind, s formats.Sub) uint32 {
	cz.subsMu.Lock()
	defer cz.subsMu.Unlock()
	key := subKey{k, s.Key}
	if n, ok := cz.subIndex[key]; ok {
		return n
	}
	if cz.subIndex == nil {
		cz.subIndex = map[subKey]uint32{}
	}
	cz.subs = append(cz.subs, s)
	cz.subOrd = append(cz.subOrd, cz.kindSubs[k])
	cz.kindSubs[k]++
	n := uint32(len(cz.subs))
	cz.subIndex[key] = n
	return n
}

// metadataJSON returns the category metadata of c ("" for none).
func (cz *categorizers) metadataJSON(c category) string {
	if cz == nil || c.sub == 0 || int(c.sub) > len(cz.subs) {
		return ""
	}
	return cz.subs[c.sub-1].JSON
}

// less orders categories as the reference's category manager does: by
// name, then by subcategory (the categorizer's comparison of layouts or
// header keys).
func (cz *categorizers) less(a, b category) bool {
	if na, nb := a.name(), b.name(); na != nb {
		return na < nb
	}
	if a.sub == b.sub || cz == nil {
		return false
	}
	if a.sub == 0 || b.sub == 0 {
		return a.sub == 0
	}
	ka, kb := cz.subs[a.sub-1].Key, cz.subs[b.sub-1].Key
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i] < kb[i]
		}
	}
	return false
}

// newCategorizers sets up the categorizers (none with --hollow, which
// stores no data) and marks the regular files the hotness list names,
// with the reference's warnings about a hotness categorizer without a
// list.
func (b *builder) newCategorizers(root *entry) (*categorizers, error) {
	opt := b.opt
	cz := &categorizers{order: opt.Categorize, incIdx: -1, hotIdx: -1}
	if opt.Hollow {
		return cz, nil
	}
	if opt.AcceptCategory != nil {
		cz.accept = opt.AcceptCategory
	}
	for _, name := range opt.Categorize {
		if formats.Categories(name) != nil {
			cz.detect = true
		}
	}
	inc, hot := opt.categorizerIndex(CategoryIncompressible), opt.categorizerIndex(CategoryHotness)
	if inc >= 0 {
		io := opt.Incompressible
		if io == nil {
			d := DefaultIncompressible()
			io = &d
		}
		probe, err := newProbe(io)
		if err != nil {
			return nil, err
		}
		cz.inc, cz.probe, cz.incIdx = io, probe, inc
	}
	if hot < 0 {
		return cz, nil
	}
	cz.hotness, cz.hotIdx = true, hot
	switch {
	case opt.Hotness == nil:
		b.sc.warn("hotness categorizer: no hotness list provided")
		return cz, nil
	case len(opt.Hotness.Paths) == 0:
		b.sc.warn("hotness categorizer: empty hotness list")
		return cz, nil
	}
	listed := make(map[string]bool, len(opt.Hotness.Paths))
	for _, p := range opt.Hotness.Paths {
		listed[p] = true
	}
	found := 0
	var visit func(e *entry)
	visit = func(e *entry) {
		if e.ino.kind == kReg && listed[e.rel()] {
			e.ino.hot = true
			found++
			b.debugf("hotness categorizer: %s is listed", e.rel())
		}
		for _, c := range e.children {
			visit(c)
		}
	}
	visit(root)
	b.verbosef("hotness categorizer: %d of the %d listed paths are regular files in the input", found, len(opt.Hotness.Paths))
	return cz, nil
}

// detectFormats runs the random-access categorizers (hotness, pcmaudio,
// fits, binary) on f in --categorize order, as the reference does: the
// first that claims the file wins, and f.claimedBy records which (its
// position plus one). A hotness win is applied later, per content
// (applyHotness).
func (b *builder) detectFormats(f *inode, r io.ReaderAt) {
	cz := b.cz
	if cz == nil || f.size == 0 {
		return
	}
	opt := formats.Options{
		Path: quotePath(b.osPath(f)),
		Log: func(l formats.Level, msg string) {
			// Files are categorized on several scanner workers.
			cz.logMu.Lock()
			defer cz.logMu.Unlock()
			switch l {
			case formats.Warn:
				b.sc.warn("%s", msg)
			case formats.Info, formats.Verbose:
				b.verbosef("%s", msg)
			default:
				b.tracef("%s", msg)
			}
		},
	}
	if cz.accept != nil {
		opt.Accept = cz.accept
	}
	for i, name := range cz.order {
		var parts []formats.Part
		switch name {
		case CategoryHotness:
			if f.hot {
				f.setClaimedBy(i + 1)
				return
			}
		case formats.PCMAudio:
			parts = formats.DetectPCMAudio(r, f.size, opt)
		case formats.FITS:
			parts = formats.DetectFITS(r, f.size, opt)
		case formats.BinaryFormats:
			parts = formats.DetectBinary(r, f.size, opt)
		}
		if parts == nil || !b.wholeFrames(f, parts) {
			continue
		}
		frags := make([]fragment, len(parts))
		for j, p := range parts {
			k, _ := catKindOf(p.Category)
			c := category{kind: k}
			if p.HasSub {
				c.sub = cz.addSub(k, p.Sub)
			}
			frags[j] = fragment{c, p.Size}
		}
		f.setFrags(frags)
		f.setClaimedBy(i + 1)
		b.tracef("%s: %s categorizer: %v", f.relPath(), name, frags)
		return
	}
}

// quotePath writes a path in messages as the reference does: absolute,
// in double quotes, with quotes and backslashes escaped.
func quotePath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		p = a
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p) + `"`
}

// wholeFrames checks that the parts with a layout are whole frames of
// the size their category's compressor needs (Options.Granularity): the
// segmenter cannot cut a part that is not, and the reference fails on one
// (a FITS image with a Bayer pattern and an odd number of pixels). Such a
// file is left to the next categorizer, with a warning.
func (b *builder) wholeFrames(f *inode, parts []formats.Part) bool {
	if b.opt.Granularity == nil {
		return true
	}
	for _, p := range parts {
		if !p.HasSub || p.Sub.JSON == "" {
			continue
		}
		if g := int64(b.opt.Granularity(p.Category, p.Sub.JSON)); g > 1 && p.Size%g != 0 {
			b.sc.warn("%s: %s data of %d bytes is not a whole number of %d-byte frames; not categorized", b.osPath(f), p.Category, p.Size, g)
			return false
		}
	}
	return true
}

// start returns the incompressible categorizer's job for a file (nil: it
// does not run on the file). A file that a categorizer before it in
// --categorize claimed is not examined.
func (cz *categorizers) start(f *inode) *fileCat {
	if cz == nil || cz.probe == nil || f.size == 0 || f.size < cz.inc.MinInputSize || (f.claimedBy() > 0 && f.claimedBy() <= cz.incIdx) {
		return nil
	}
	return newFileCat(cz.inc, cz.probe)
}

// applyHotness puts the contents of listed files into the hotness category
// unless a categorizer before hotness in --categorize claimed them. A
// content stored once for several paths is hot when any of them is
// listed (the reference decides by the first path it scanned).
func (cz *categorizers) applyHotness(contents []*content) {
	if cz == nil || !cz.hotness {
		return
	}
	for _, c := range contents {
		if c.size == 0 || !slices.ContainsFunc(c.inodes, func(in *inode) bool { return in.hot }) {
			continue
		}
		if c.rep.claimedBy() == 0 || c.rep.claimedBy() > cz.hotIdx {
			c.rep.setFrags([]fragment{{catHotness, c.size}})
		}
	}
}

// contentFragments returns c's fragments, a single default one when the
// categorizer left the file alone.
func (c *content) fragments() []fragment {
	if c.rep.frags() != nil && c.size > 0 {
		return c.rep.frags()
	}
	return []fragment{{catDefault, c.size}}
}

// categoryPlan is the order in which category streams are written (by
// name and subcategory, as the reference sorts them) and the order of
// category_names (kinds by total fragment size, largest first, as the
// reference lists them; equal sizes in the order of rank).
func categoryPlan(contents []*content, rank func(category) int, less func(a, b category) bool) (streams []category, names []catKind) {
	size := map[category]int64{}
	kindSize := map[catKind]int64{}
	for _, c := range contents {
		for _, f := range c.fragments() {
			size[f.cat] += f.size
			kindSize[f.cat.kind] += f.size
		}
	}
	for cat := range size {
		streams = append(streams, cat)
	}
	sort.Slice(streams, func(i, j int) bool { return less(streams[i], streams[j]) })
	for k := range kindSize {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := names[i], names[j]
		if kindSize[a] != kindSize[b] {
			return kindSize[a] > kindSize[b]
		}
		return rank(category{kind: a}) < rank(category{kind: b})
	})
	return streams, names
}

// categoryMetadata records the categories in md as the reference does:
// category_names lists the categories that have data (largest first),
// block_categories gives each block's index into it, category_metadata_json
// the metadata of each category (in stream order) that has any, and
// block_category_metadata each such block's index into that.
func (b *builder) categoryMetadata(md *metadata.Metadata, unique []*content) {
	if base := b.opt.Base; base != nil && (base.BlockCategories != nil || len(b.opt.Categorize) > 0) {
		b.baseCategoryMetadata(md, unique)
		return
	}
	if len(b.opt.Categorize) == 0 {
		return
	}
	streams, names := categoryPlan(unique, b.opt.rank, b.cz.less)
	index := map[catKind]uint32{}
	md.CategoryNames = make([]string, len(names))
	for i, k := range names {
		md.CategoryNames[i] = kindNames[k]
		index[k] = uint32(i)
	}
	md.BlockCategories = make([]uint32, len(b.blockCats))
	for i, cat := range b.blockCats {
		md.BlockCategories[i] = index[cat.kind]
	}
	md.HasCategoryNames, md.HasBlockCategories = true, true
	md.CategoryMetadataJSON, md.HasCategoryMetadataJSON = []string{}, true
	jsonIdx := map[category]uint32{}
	for _, c := range streams {
		if js := b.cz.metadataJSON(c); js != "" {
			jsonIdx[c] = uint32(len(md.CategoryMetadataJSON))
			md.CategoryMetadataJSON = append(md.CategoryMetadataJSON, js)
		}
	}
	md.BlockCategoryMetadata, md.HasBlockCategoryMetadata = nil, true
	for i, cat := range b.blockCats {
		if k, ok := jsonIdx[cat]; ok {
			md.BlockCategoryMetadata = append(md.BlockCategoryMetadata, metadata.KV32{Key: uint32(i), Value: k})
		}
	}
	b.opt.dropCategories(md)
}

// baseCategoryMetadata records the categories of a build that grows from
// base images: the base blocks' categories first, in the order the base
// names them, then those of the new blocks.
func (b *builder) baseCategoryMetadata(md *metadata.Metadata, unique []*content) {
	base := b.opt.Base
	index := map[string]uint32{}
	md.CategoryNames = nil
	add := func(name string) uint32 {
		if name == "" {
			name = CategoryDefault
		}
		i, ok := index[name]
		if !ok {
			i = uint32(len(md.CategoryNames))
			index[name] = i
			md.CategoryNames = append(md.CategoryNames, name)
		}
		return i
	}
	// The blocks by their numbers while segmenting, in image order: base
	// blocks are below base.Blocks.
	order := b.blockOrder
	if order == nil {
		order = make([]int, base.Blocks+len(b.blockCats))
		for i := range order {
			order[i] = i
		}
	}
	catName := func(n int) string {
		if n >= base.Blocks {
			return b.blockCats[n-base.Blocks].name()
		}
		if n < len(base.BlockCategories) {
			return base.BlockCategories[n]
		}
		return CategoryDefault
	}
	md.BlockCategories = make([]uint32, 0, len(order))
	for _, n := range order {
		if n < base.Blocks {
			md.BlockCategories = append(md.BlockCategories, add(catName(n)))
		}
	}
	if len(b.opt.Categorize) > 0 {
		_, names := categoryPlan(unique, b.opt.rank, b.cz.less)
		for _, k := range names {
			add(kindNames[k])
		}
	}
	md.BlockCategories = md.BlockCategories[:0]
	for _, n := range order {
		md.BlockCategories = append(md.BlockCategories, add(catName(n)))
	}
	md.HasCategoryNames, md.HasBlockCategories = true, true
	md.CategoryMetadataJSON, md.HasCategoryMetadataJSON = []string{}, true
	md.BlockCategoryMetadata, md.HasBlockCategoryMetadata = nil, true
	jsonIdx := map[string]uint32{}
	catJSON := func(n int) string {
		if n >= base.Blocks {
			return b.cz.metadataJSON(b.blockCats[n-base.Blocks])
		}
		return base.BlockCategoryMetadata[n]
	}
	// The base blocks' metadata first, as their names.
	for pass := range 2 {
		for i, n := range order {
			if (n < base.Blocks) != (pass == 0) {
				continue
			}
			j := catJSON(n)
			if j == "" {
				continue
			}
			k, ok := jsonIdx[j]
			if !ok {
				k = uint32(len(md.CategoryMetadataJSON))
				jsonIdx[j] = k
				md.CategoryMetadataJSON = append(md.CategoryMetadataJSON, j)
			}
			md.BlockCategoryMetadata = append(md.BlockCategoryMetadata, metadata.KV32{Key: uint32(i), Value: k})
		}
	}
	slices.SortFunc(md.BlockCategoryMetadata, func(x, y metadata.KV32) int { return int(x.Key) - int(y.Key) })
	b.opt.dropCategories(md)
}
