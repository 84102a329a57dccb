package mkdwarfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/internal/cli"
)

// implicitCategorizers is what --categorize without a list enables, as
// with the reference. As there, hotness must be named (a hotness list
// alone does not enable it).
const implicitCategorizers = "fits,pcmaudio,binary,incompressible"

// categorizeDefaults returns the per-category settings --categorize brings
// along at a compression level unless the command line sets them for the
// category: the reference's, level by level. The reference compresses
// pcmaudio/waveform with FLAC and fits/image with RICEPP where it was
// built with them, else with zstd at the level's setting; so does
// godwarfs, by whether this build has the codec, and notes says which
// was taken.
func categorizeDefaults(level int) (defaults map[string][]string, notes []string) {
	defaults = map[string][]string{"compression": {"incompressible::null"}}
	if level == 0 {
		return defaults, nil
	}
	zl, win := 5, "20"
	order := []string{"pcmaudio/waveform::revpath", "fits/image::revpath"}
	switch {
	case level <= 4:
		zl, win = 3, "0"
	case level >= 8:
		zl, win = 8, "16"
		order = order[1:]
	}
	pick := func(cat, spec string) string {
		if _, err := encode.NewCompressor(spec); err == nil {
			return cat + "::" + spec
		}
		alt := fmt.Sprintf("zstd:level=%d", zl)
		notes = append(notes, fmt.Sprintf("%s: %s compression is not available in this build; using %s instead, as the reference does without it", cat, strings.SplitN(spec, ":", 2)[0], alt))
		return cat + "::" + alt
	}
	defaults["compression"] = append(defaults["compression"],
		pick("pcmaudio/waveform", fmt.Sprintf("flac:level=%d", zl)), pick("fits/image", "ricepp"))
	defaults["order"] = order
	defaults["window-size"] = []string{"pcmaudio/waveform::" + win, "fits/image::0"}
	return defaults, notes
}

// categorizeOptions reads --categorize, --hotness-list and the
// --incompressible-* options.
func categorizeOptions(p *cli.Result, cfg *Config) error {
	o := &cfg.Build
	list, on := p.Lookup("categorize")
	if !on {
		for _, n := range []string{"incompressible-min-input-size", "incompressible-block-size", "incompressible-fragments",
			"incompressible-ratio", "incompressible-zstd-level"} {
			if p.Has(n) {
				return usagef("--%s needs --categorize", n)
			}
		}
		if p.Has("hotness-list") {
			cfg.warnings = append(cfg.warnings, "--hotness-list has no effect without --categorize=hotness")
		}
		return nil
	}
	if list == "" {
		list = implicitCategorizers
	}
	for _, name := range strings.Split(list, ",") {
		switch {
		case slices.Contains(dedup.Categorizers, name):
		default:
			return usagef("could not create categorizer: unknown categorizer: %q (supported: %s)", name, strings.Join(dedup.Categorizers, ", "))
		}
		if slices.Contains(o.Categorize, name) {
			return usagef("could not create categorizer: %q given twice", name)
		}
		o.Categorize = append(o.Categorize, name)
	}
	if file, ok := p.Lookup("hotness-list"); !slices.Contains(o.Categorize, dedup.CategoryHotness) {
		if ok {
			cfg.warnings = append(cfg.warnings, "--hotness-list has no effect without hotness in --categorize")
		}
	} else if ok {
		b, err := os.ReadFile(file)
		if err != nil {
			if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
				err = pe.Err
			}
			return fmt.Errorf("could not create categorizer: failed to open file '%s': %w", file, err)
		}
		paths, err := dedup.ReadHotnessList(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("could not create categorizer: %s: %w", file, err)
		}
		o.Hotness = &dedup.HotnessOptions{Paths: paths}
	}
	io := dedup.DefaultIncompressible()
	if v, ok := p.Lookup("incompressible-min-input-size"); ok {
		n, err := cli.ParseSize(v)
		if err != nil {
			return cli.BadValue("incompressible-min-input-size", v, "expected a size such as 256 or 4k")
		}
		io.MinInputSize = n
	}
	if v, ok := p.Lookup("incompressible-block-size"); ok {
		n, err := cli.ParseSize(v)
		if err != nil || n <= 0 || n > 1<<30 {
			return cli.BadValue("incompressible-block-size", v, "expected a size from 1 to 1g")
		}
		io.BlockSize = int(n)
	}
	io.Fragments = p.Has("incompressible-fragments")
	if v, ok := p.Lookup("incompressible-ratio"); ok {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 {
			return cli.BadValue("incompressible-ratio", v, "expected a non-negative number such as 0.99")
		}
		io.Ratio = r
	}
	if v, ok := p.Lookup("incompressible-zstd-level"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < -(1<<17) || n > 22 {
			return cli.BadValue("incompressible-zstd-level", v, "expected a zstd level from -131072 to 22")
		}
		io.ZstdLevel = n
	}
	o.Incompressible = &io
	return nil
}

// categorized is one option's values: the default (last plain value, if
// any) and per-category values.
type categorized struct {
	def   string
	hasDf bool
	cats  map[string]string
}

// parseCategorized splits the values of a CATEGORY::VALUE option as the
// reference does: "a,b::v" sets v for categories a and b; a category set
// twice is an error; categories of categorizers that are not enabled are
// ignored; and --categorize's defaults fill in what is left unset.
//
// active are the categories that exist: those of the enabled categorizers
// and the default one, or, when rewriting an image (whose categories are
// only known then), every category the reference knows; none without
// --categorize.
func parseCategorized(p *cli.Result, name string, active []string, defaults map[string][]string) (*categorized, error) {
	categorize := len(active) > 0
	c := &categorized{cats: map[string]string{}}
	fail := func(v, why string) error {
		return usagef("failed to parse value '%s' for option '--%s': %s", v, name, why)
	}
	set := func(v string, fallback bool) error {
		ctx, val, ok := strings.Cut(v, "::")
		if !ok {
			c.def, c.hasDf = v, true
			return nil
		}
		if !categorize {
			return fail(v, "cannot configure category-specific options without any categories")
		}
		for _, cat := range strings.Split(ctx, ",") {
			on := slices.Contains(active, cat)
			if !on && !slices.Contains(dedup.ReferenceCategories, cat) {
				return fail(v, fmt.Sprintf("unknown category: '%s'", cat))
			}
			if !on {
				continue
			}
			if _, dup := c.cats[cat]; dup {
				if fallback {
					continue
				}
				return fail(v, fmt.Sprintf("duplicate context '%s' for option '--%s'", cat, name))
			}
			c.cats[cat] = val
		}
		return nil
	}
	for _, v := range p.All(name) {
		if err := set(v, false); err != nil {
			return nil, err
		}
	}
	if categorize {
		for _, v := range defaults[name] {
			if err := set(v, true); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// perCategoryOptions applies the CATEGORY::VALUE forms of -C, --order, -B,
// -W, -w and --bloom-filter-size; plain values were applied already.
func perCategoryOptions(p *cli.Result, cfg *Config) error {
	o := &cfg.Build
	var on []string
	switch {
	case isRecompress(p):
		on = append([]string{dedup.CategoryDefault}, dedup.ReferenceCategories...)
	case len(o.Categorize) > 0:
		on = append([]string{dedup.CategoryDefault}, dedup.CategoriesOf(o.Categorize)...)
	}
	defaults, notes := categorizeDefaults(cfg.level)
	for _, n := range notes {
		// Only for the categories that are in use.
		if owner, _, _ := strings.Cut(n, "/"); slices.Contains(o.Categorize, owner) {
			cfg.notes = append(cfg.notes, n)
		}
	}
	comp, err := parseCategorized(p, "compression", on, defaults)
	if err != nil {
		return err
	}
	for cat, spec := range comp.cats {
		if _, err := encode.NewCompressor(spec); err != nil {
			return cli.BadValue("compression", cat+"::"+spec, err.Error())
		}
		if cfg.CategoryComp == nil {
			cfg.CategoryComp = map[string]string{}
		}
		cfg.CategoryComp[cat] = spec
	}
	ord, err := parseCategorized(p, "order", on, defaults)
	if err != nil {
		return err
	}
	for cat, v := range ord.cats {
		// The category's order options start from the defaults, not
		// from the global --order's.
		scratch := dedup.DefaultOptions()
		scratch.Input = o.Input
		if err := parseOrder(&scratch, v); err != nil {
			return err
		}
		co := o.PerCategory[cat]
		co.Order, co.Nilsimsa, co.ExplicitOrder = &scratch.Order, &scratch.Nilsimsa, scratch.ExplicitOrder
		setCategory(o, cat, co)
	}
	for _, n := range []struct {
		name   string
		lo, hi int
		field  func(*dedup.CategoryOptions) **int
	}{
		{"max-lookback-blocks", 0, 1 << 16, func(c *dedup.CategoryOptions) **int { return &c.Lookback }},
		{"window-size", 0, 24, func(c *dedup.CategoryOptions) **int { return &c.WindowBits }},
		{"window-step", 0, 8, func(c *dedup.CategoryOptions) **int { return &c.WindowStep }},
		{"bloom-filter-size", 0, 10, func(c *dedup.CategoryOptions) **int { return &c.BloomSizeShift }},
	} {
		v, err := parseCategorized(p, n.name, on, defaults)
		if err != nil {
			return err
		}
		for cat, s := range v.cats {
			x, err := strconv.Atoi(s)
			if err != nil || x < n.lo || x > n.hi {
				return cli.BadValue(n.name, cat+"::"+s, fmt.Sprintf("expected a number from %d to %d", n.lo, n.hi))
			}
			if n.name == "window-size" && x > 0 && x < 5 {
				return usagef("--window-size must be 0 or at least 5")
			}
			co := o.PerCategory[cat]
			*n.field(&co) = &x
			setCategory(o, cat, co)
		}
	}
	return nil
}

func setCategory(o *dedup.Options, cat string, co dedup.CategoryOptions) {
	if o.PerCategory == nil {
		o.PerCategory = map[string]dedup.CategoryOptions{}
	}
	o.PerCategory[cat] = co
}

// lastPlain returns the last value of an option that is not
// category-specific.
func lastPlain(p *cli.Result, name string) (string, bool) {
	all := p.All(name)
	for i := len(all) - 1; i >= 0; i-- {
		if !strings.Contains(all[i], "::") {
			return all[i], true
		}
	}
	return "", false
}
