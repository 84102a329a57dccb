package cli

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Shells lists the shells WriteCompletion writes for.
var Shells = []string{"bash", "zsh", "fish"}

// CompletionFile is where a shell looks for the completion of the tool
// name, relative to that shell's directory of completions.
func CompletionFile(shell, name string) string {
	switch shell {
	case "zsh":
		return "_" + name
	case "fish":
		return name + ".fish"
	}
	return name
}

// literal is an alternative of an option's argument that stands for
// itself ("skip" in "skip|rename|error"), not a placeholder ("N").
var literal = regexp.MustCompile(`^[a-z0-9][a-z0-9_.+-]*$`)

// pathArg: an argument naming a file or directory.
var pathArg = regexp.MustCompile(`FILE|PATH|IMAGE|DIR|MOUNTPOINT|SOURCE|LIST`)

// completion is what an option's value completes to.
type completion struct {
	words []string // fixed words, or
	files bool     // file names
	list  bool     // a comma-separated list of words
}

// valueCompletion says how o's value completes: the words of
// p.ValueWords, the literal alternatives of its Arg, file names for
// an Arg naming a path, or nothing.
func (p *Program) valueCompletion(o Option) completion {
	if w := p.ValueWords[o.Long]; len(w) > 0 {
		return completion{words: w, list: strings.Contains(o.Arg, ",")}
	}
	var words []string
	for _, alt := range strings.Split(o.Arg, "|") {
		if literal.MatchString(alt) {
			words = append(words, alt)
		}
	}
	if len(words) > 1 {
		return completion{words: words}
	}
	return completion{files: pathArg.MatchString(o.Arg)}
}

// completable lists the options a completion offers: those --help
// lists, standard ones included.
func (p *Program) completable() []Option {
	var out []Option
	for _, o := range p.AllOptions() {
		if !o.Hidden && !o.Unsupported {
			out = append(out, o)
		}
	}
	return out
}

// shortHelp is the first clause of o's help, for a completion menu.
func shortHelp(o Option) string {
	h := o.Help
	if i := strings.IndexAny(h, ";("); i > 0 {
		h = h[:i]
	}
	h = strings.TrimSpace(h)
	if len(h) > 70 {
		h = strings.TrimSpace(h[:67]) + "..."
	}
	return h
}

// WriteCompletion writes the completion script of p for shell (one of
// Shells), generated from the option table that --help and the manual
// page show.
func (p *Program) WriteCompletion(w io.Writer, shell string) error {
	switch shell {
	case "bash":
		return p.writeBash(w)
	case "zsh":
		return p.writeZsh(w)
	case "fish":
		return p.writeFish(w)
	}
	return fmt.Errorf("no completion for shell %q (%s)", shell, strings.Join(Shells, ", "))
}

func funcName(name string) string { return "_godwarfs_" + strings.ReplaceAll(name, "-", "_") }

func (p *Program) writeBash(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %s, generated from its option table by go run ./man.\n", p.Name)
	fmt.Fprintf(&b, "%s() {\n", funcName(p.Name))
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} pre=\n")
	b.WriteString("  # --opt=value: bash splits at the '=', so the option is one word further back.\n")
	b.WriteString("  if [[ $cur == = ]]; then cur=; fi\n")
	b.WriteString("  if [[ $prev == = && $COMP_CWORD -ge 2 ]]; then prev=${COMP_WORDS[COMP_CWORD-2]}; fi\n")
	b.WriteString("  if [[ $cur == =* ]]; then cur=${cur#=}; fi\n")
	b.WriteString("  case $prev in\n")
	var all []string
	for _, o := range p.completable() {
		names := []string{"--" + o.Long}
		if o.Short != "" {
			names = append(names, "-"+o.Short)
		}
		all = append(all, names...)
		if !o.HasValue {
			continue
		}
		c := p.valueCompletion(o)
		fmt.Fprintf(&b, "    %s)\n", strings.Join(names, "|"))
		switch {
		case len(c.words) > 0:
			b.WriteString("      if [[ $cur == *,* ]]; then pre=${cur%,*},; cur=${cur##*,}; fi\n")
			fmt.Fprintf(&b, "      COMPREPLY=($(compgen -P \"$pre\" -W '%s' -- \"$cur\"))\n", strings.Join(c.words, " "))
		case c.files:
			b.WriteString("      COMPREPLY=($(compgen -f -- \"$cur\"))\n")
		default:
			b.WriteString("      COMPREPLY=()\n")
		}
		b.WriteString("      return ;;\n")
	}
	b.WriteString("  esac\n")
	b.WriteString("  if [[ $cur == -* ]]; then\n")
	fmt.Fprintf(&b, "    COMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n", strings.Join(all, " "))
	b.WriteString("    return\n  fi\n")
	b.WriteString("  COMPREPLY=($(compgen -f -- \"$cur\"))\n")
	b.WriteString("}\n")
	fmt.Fprintf(&b, "complete -o filenames -F %s %s\n", funcName(p.Name), p.Name)
	_, err := io.WriteString(w, b.String())
	return err
}

// zshQuote escapes s for the description of a zsh _arguments spec
// inside single quotes.
func zshQuote(s string) string {
	r := strings.NewReplacer(`'`, `'\''`, `[`, `\[`, `]`, `\]`, `:`, `\:`)
	return r.Replace(s)
}

func (p *Program) writeZsh(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "#compdef %s\n", p.Name)
	fmt.Fprintf(&b, "# zsh completion for %s, generated from its option table by go run ./man.\n", p.Name)
	b.WriteString("_arguments -s -S \\\n")
	for _, o := range p.completable() {
		desc := "[" + zshQuote(shortHelp(o)) + "]"
		action := ""
		if o.HasValue {
			c := p.valueCompletion(o)
			arg := zshQuote(o.Arg)
			switch {
			case len(c.words) > 0 && c.list:
				action = ":" + arg + ":_sequence compadd - " + strings.Join(c.words, " ")
			case len(c.words) > 0:
				action = ":" + arg + ":(" + strings.Join(c.words, " ") + ")"
			case c.files:
				action = ":" + arg + ":_files"
			default:
				action = ":" + arg + ": "
			}
		}
		long := "--" + o.Long
		if o.HasValue {
			long += "=" // --opt=value and --opt value
		}
		if o.Short != "" {
			fmt.Fprintf(&b, "  '(-%s --%s)'{-%s,%s}'%s%s' \\\n", o.Short, o.Long, o.Short, long, desc, action)
		} else {
			fmt.Fprintf(&b, "  '%s%s%s' \\\n", long, desc, action)
		}
	}
	b.WriteString("  '*:file:_files'\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func (p *Program) writeFish(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# fish completion for %s, generated from its option table by go run ./man.\n", p.Name)
	for _, o := range p.completable() {
		fmt.Fprintf(&b, "complete -c %s -l %s", p.Name, o.Long)
		if o.Short != "" {
			fmt.Fprintf(&b, " -s %s", o.Short)
		}
		if o.HasValue {
			c := p.valueCompletion(o)
			switch {
			case len(c.words) > 0:
				fmt.Fprintf(&b, " -x -a %s", fishQuote(strings.Join(c.words, " ")))
			case c.files:
				b.WriteString(" -r -F")
			default:
				b.WriteString(" -x")
			}
		}
		fmt.Fprintf(&b, " -d %s\n", fishQuote(shortHelp(o)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
