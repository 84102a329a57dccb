// Package cli is the command-line layer shared by the tools: one parser
// (GNU-style "--opt=v", "--opt v", "-o v", "-ov", bundled flags), one
// usage-error type, one set of exit codes, one wording for the same
// mistake, and the standard --help, --version and --man options.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/godwarfs/godwarfs/internal/version"
)

// Exit statuses of every tool; they are the reference tools'.
const (
	ExitOK = 0
	// ExitError: a usage error, an unreadable or corrupt image, or a run
	// that failed and produced nothing.
	ExitError = 1
	// ExitPartial: mkdwarfs and dwarfsextract produced their output, but
	// some inputs could not be read (--continue-on-error); dwarfsck
	// --print-header on an image without a header.
	ExitPartial = 2
)

// Option describes one option. Long names are given without "--", short
// names without "-" (empty: none).
type Option struct {
	Long, Short string
	HasValue    bool
	// Optional values are only taken as "--opt=VALUE"; "--opt" alone
	// stands for Implicit and never consumes the next argument.
	Optional bool
	Implicit string
	// Unsupported options exist in the reference tools but not here:
	// they are refused with a message saying so.
	Unsupported bool
	// Hidden options are accepted but not listed in --help.
	Hidden  bool
	Arg     string // value name for the help text
	Default string // shown in the help text
	Help    string
}

// UsageError is a mistake on the command line.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Sprintf(format, args...)}
}

// IsUsage reports whether err is (or wraps) a *UsageError.
func IsUsage(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue)
}

// The wording of the common mistakes, used by every tool.

// BadValue reports an invalid option value; want says what is accepted.
func BadValue(opt, val, want string) error {
	if want != "" {
		want = ": " + want
	}
	return Usagef("invalid value '%s' for option '%s'%s", val, dashed(opt), want)
}

// Missing reports a required option that was not given.
func Missing(opt string) error {
	return Usagef("option '%s' is required", dashed(opt))
}

// Conflict reports options that cannot be used together.
func Conflict(a, b string) error {
	return Usagef("options '%s' and '%s' cannot be used together", dashed(a), dashed(b))
}

// Unexpected reports a surplus positional argument.
func Unexpected(arg string) error {
	return Usagef("unexpected argument '%s'", arg)
}

// dashed puts "--" before a bare long name.
func dashed(opt string) string {
	if strings.HasPrefix(opt, "-") {
		return opt
	}
	return "--" + opt
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
	v, ok := r.Lookup(long)
	if !ok {
		return def
	}
	return v
}

// Lookup returns the last value of an option and whether it was given.
func (r *Result) Lookup(long string) (string, bool) {
	v := r.Values[long]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

// All returns every value of a repeatable option.
func (r *Result) All(long string) []string { return r.Values[long] }

// Int returns an option's integer value, which must lie in [lo, hi].
func (r *Result) Int(long string, lo, hi int) (n int, ok bool, err error) {
	v, ok := r.Lookup(long)
	if !ok {
		return 0, false, nil
	}
	n, err = strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, false, BadValue(long, v, fmt.Sprintf("expected a number from %d to %d", lo, hi))
	}
	return n, true, nil
}

// Size returns an option's byte count ("512m", "2g"); zero is refused
// unless zeroOK.
func (r *Result) Size(long string, zeroOK bool) (n int64, ok bool, err error) {
	v, ok := r.Lookup(long)
	if !ok {
		return 0, false, nil
	}
	n, err = ParseSize(v)
	if err != nil || (n == 0 && !zeroOK) {
		return 0, false, BadValue(long, v, "expected a size such as 512m or 2g")
	}
	return n, true, nil
}

// Parse parses args (without the program name). Errors are *UsageError.
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
				return nil, Usagef("unrecognised option '--%s'", name)
			}
			if o.Unsupported {
				return nil, Usagef("option '--%s' is not supported by godwarfs", name)
			}
			switch {
			case o.HasValue && o.Optional && !hasVal:
				val = o.Implicit
			case o.HasValue && !hasVal:
				if i+1 >= len(args) {
					return nil, Usagef("option '--%s' requires a value", name)
				}
				i++
				val = args[i]
			case !o.HasValue && hasVal:
				return nil, Usagef("option '--%s' does not take a value", name)
			}
			res.Values[o.Long] = append(res.Values[o.Long], val)
		case len(a) > 1 && a[0] == '-':
			// A cluster of short options; one taking a value ends it.
			for j := 1; j < len(a); j++ {
				o := byShort[a[j:j+1]]
				if o == nil {
					return nil, Usagef("unrecognised option '-%s'", a[j:j+1])
				}
				if o.Unsupported {
					return nil, Usagef("option '-%s' is not supported by godwarfs", o.Short)
				}
				if !o.HasValue {
					res.Values[o.Long] = append(res.Values[o.Long], "")
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						return nil, Usagef("option '-%s' requires a value", o.Short)
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

// The options every tool has; a tool's table may define them itself (to
// add a short name).
var standard = []Option{
	{Long: "help", Short: "h", Help: "print this help and exit"},
	{Long: "version", Help: "print the version and exit"},
	{Long: "man", Help: "print the manual page and exit"},
}

// Program is one tool's command line: its options and help texts.
type Program struct {
	Name     string
	Summary  string   // one line: what the tool does
	Synopsis []string // usage lines, without the tool name
	Options  []Option
	// LongHelp names an option that prints the help like --help (for
	// MoreHelp to print more).
	LongHelp string
	// MoreHelp, if set, is printed after the option list by --help.
	MoreHelp func(w io.Writer, r *Result)
	// Exit lists the tool's exit statuses for --help and the manual.
	Exit []ExitStatus
	// Manual is the rest of the manual page.
	Manual Manual
	// ValueWords are the words an option's value completes to (by long
	// name), where its Arg does not list them (dwarfs -o).
	ValueWords map[string][]string
}

// ExitStatus explains one exit status.
type ExitStatus struct {
	Code    int
	Meaning string
}

// AllOptions returns the tool's options plus the standard ones it does not
// define itself.
func (p *Program) AllOptions() []Option {
	opts := append([]Option(nil), p.Options...)
	have := map[string]bool{}
	for _, o := range opts {
		have[o.Long] = true
	}
	for _, o := range standard {
		if !have[o.Long] {
			opts = append(opts, o)
		}
	}
	return opts
}

// Parse parses args (without the program name). When it returns done, the
// tool should exit with code: a usage error was reported on stderr, or
// --help, --version or --man was answered on stdout. Without any arguments
// the tools print their help, as the reference tools do.
func (p *Program) Parse(args []string, stdout, stderr io.Writer) (r *Result, code int, done bool) {
	if len(args) == 0 {
		p.Help(stdout, &Result{Values: map[string][]string{}})
		return nil, ExitOK, true
	}
	r, err := Parse(p.AllOptions(), args)
	if err != nil {
		return nil, p.Fail(stderr, err), true
	}
	switch {
	case r.Has("help"), p.LongHelp != "" && r.Has(p.LongHelp):
		p.Help(stdout, r)
	case r.Has("version"):
		io.WriteString(stdout, version.Get().Text(p.Name))
	case r.Has("man"):
		p.WriteManText(stdout)
	default:
		return r, ExitOK, false
	}
	return r, ExitOK, true
}

// Fail reports err on stderr the same way in every tool and returns the
// exit status: ExitError, with a pointer to --help for usage errors.
func (p *Program) Fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "%s: error: %v\n", p.Name, err)
	if IsUsage(err) {
		fmt.Fprintf(stderr, "Try '%s --help' for more information.\n", p.Name)
	}
	return ExitError
}

// Help writes the --help text.
func (p *Program) Help(w io.Writer, r *Result) {
	fmt.Fprintf(w, "%s (godwarfs %s) - %s\n\n", p.Name, version.Get(), p.Summary)
	for i, s := range p.Synopsis {
		lead := "Usage: "
		if i > 0 {
			lead = "       "
		}
		fmt.Fprintf(w, "%s%s %s\n", lead, p.Name, s)
	}
	fmt.Fprint(w, "\nOptions:\n", Usage(p.AllOptions()))
	if p.MoreHelp != nil {
		p.MoreHelp(w, r)
	}
	if len(p.Exit) > 0 {
		fmt.Fprint(w, "\nExit status:")
		for i, e := range p.Exit {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(w, "%s %d %s", sep, e.Code, e.Meaning)
		}
		fmt.Fprintln(w, ".")
	}
}

// optionName is "-s, --long ARG" as the help text and manual show it.
func optionName(o Option) string {
	s := "--" + o.Long
	if o.Short != "" {
		s = "-" + o.Short + ", " + s
	}
	if o.HasValue {
		arg := o.Arg
		if arg == "" {
			arg = "ARG"
		}
		if o.Optional {
			s += "[=" + arg + "]"
		} else {
			s += " " + arg
		}
	}
	return s
}

func optionHelp(o Option) string {
	if o.Default != "" {
		return o.Help + " (default: " + o.Default + ")"
	}
	return o.Help
}

// Usage formats the option list for help output, leaving out hidden and
// unsupported options.
func Usage(opts []Option) string {
	var b strings.Builder
	for _, o := range opts {
		if o.Hidden || o.Unsupported {
			continue
		}
		s := optionName(o)
		if o.Short == "" {
			s = "    " + s
		}
		fmt.Fprintf(&b, "  %-34s %s\n", s, optionHelp(o))
	}
	return b.String()
}

// Log levels of --log-level, least verbose first.
const (
	LogError = iota
	LogWarn
	LogInfo
	LogVerbose
	LogDebug
	LogTrace
)

var logLevelNames = []string{"error", "warn", "info", "verbose", "debug", "trace"}

// LogLevelOption is the --log-level option of every tool.
func LogLevelOption() Option {
	return Option{Long: "log-level", HasValue: true, Arg: "LEVEL", Default: "info",
		Help: "log level (" + strings.Join(logLevelNames, ", ") + ")"}
}

// LogLevel returns the --log-level value (LogInfo when not given).
func (r *Result) LogLevel() (int, error) {
	v, ok := r.Lookup("log-level")
	if !ok {
		return LogInfo, nil
	}
	for i, n := range logLevelNames {
		if v == n {
			return i, nil
		}
	}
	return 0, BadValue("log-level", v, "expected one of "+strings.Join(logLevelNames, ", "))
}

// ImageOffset returns the -O/--image-offset value: -1 for "auto" (the
// default: find the image after any header), else a byte offset.
func (r *Result) ImageOffset() (int64, error) {
	v, ok := r.Lookup("image-offset")
	if !ok || v == "auto" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, BadValue("image-offset", v, "expected auto or a byte offset")
	}
	return n, nil
}
