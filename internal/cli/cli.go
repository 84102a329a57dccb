// Package cli is a small command-line parser for the tools: GNU-style long
// options ("--opt=v" and "--opt v"), short options ("-o v", "-ov"),
// flags without values and repeatable options.
package cli

import (
	"fmt"
	"strings"
)

// Option describes one option. Long names are given without "--", short
// names without "-" (empty: none).
type Option struct {
	Long, Short string
	HasValue    bool
	Help        string
	Arg         string // value name for the help text
}

// Result holds parsed values: for each long name, the values seen in order
// ("" for flags), plus positional arguments.
type Result struct {
	Values map[string][]string
	Args   []string
}

// Has reports whether the option was given.
func (r *Result) Has(long string) bool { return len(r.Values[long]) > 0 }

// Get returns the last value of an option, or def.
func (r *Result) Get(long, def string) string {
	v := r.Values[long]
	if len(v) == 0 {
		return def
	}
	return v[len(v)-1]
}

// All returns every value of a repeatable option.
func (r *Result) All(long string) []string { return r.Values[long] }

// Parse parses args (without the program name).
func Parse(opts []Option, args []string) (*Result, error) {
	res := &Result{Values: map[string][]string{}}
	byLong := map[string]*Option{}
	byShort := map[string]*Option{}
	for i := range opts {
		byLong[opts[i].Long] = &opts[i]
		if opts[i].Short != "" {
			byShort[opts[i].Short] = &opts[i]
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			res.Args = append(res.Args, args[i+1:]...)
			return res, nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			o := byLong[name]
			if o == nil {
				return nil, fmt.Errorf("unknown option --%s", name)
			}
			if o.HasValue && !hasVal {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("option --%s needs a value", name)
				}
				i++
				val = args[i]
			} else if !o.HasValue && hasVal {
				return nil, fmt.Errorf("option --%s takes no value", name)
			}
			res.Values[o.Long] = append(res.Values[o.Long], val)
		case len(a) > 1 && a[0] == '-':
			// A cluster of short options; one taking a value ends it.
			for j := 1; j < len(a); j++ {
				o := byShort[a[j:j+1]]
				if o == nil {
					return nil, fmt.Errorf("unknown option -%s", a[j:j+1])
				}
				if !o.HasValue {
					res.Values[o.Long] = append(res.Values[o.Long], "")
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						return nil, fmt.Errorf("option -%s needs a value", o.Short)
					}
					i++
					val = args[i]
				}
				res.Values[o.Long] = append(res.Values[o.Long], val)
				break
			}
		default:
			res.Args = append(res.Args, a)
		}
	}
	return res, nil
}

// Usage formats the option list for help output.
func Usage(opts []Option) string {
	var b strings.Builder
	for _, o := range opts {
		s := "  "
		if o.Short != "" {
			s += "-" + o.Short + ", "
		} else {
			s += "    "
		}
		s += "--" + o.Long
		if o.HasValue {
			arg := o.Arg
			if arg == "" {
				arg = "arg"
			}
			s += " " + arg
		}
		fmt.Fprintf(&b, "%-34s %s\n", s, o.Help)
	}
	return b.String()
}
