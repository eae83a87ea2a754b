package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// buildVersion is set by `make build` (-ldflags -X) to the git revision.
var buildVersion string

// version is the revision the binary was built from (make build stamps
// it; go build's own VCS stamp is used otherwise) and the Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if buildVersion != "" {
		return buildVersion + ", " + bi.GoVersion
	}
	v, rev, dirty := bi.Main.Version, "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " (" + rev
		if dirty {
			v += ", modified"
		}
		v += ")"
	}
	return v + ", " + bi.GoVersion
}

// groupCommand makes a command that only holds subcommands: run alone it
// shows its help; with an unknown subcommand it fails and suggests one
// (cobra would print the help and exit 0).
func groupCommand(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:                        use + " <command>",
		Short:                      short,
		Args:                       cobra.ArbitraryArgs,
		SuggestionsMinimumDistance: 2,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf("; did you mean %q?", s[0])
			}
			return fmt.Errorf("%s (see '%s --help')", msg, cmd.CommandPath())
		},
	}
}

// suggestFlag adds "did you mean --x?" to an unknown-flag error.
func suggestFlag(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath())
	}
	best, bestD := "", 3
	visit := func(f *pflag.Flag) {
		if d := editDistance(name, f.Name); d < bestD || (d == bestD && best == "") && d < 3 {
			best, bestD = f.Name, d
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if best != "" {
		return fmt.Errorf("%w; did you mean --%s? (see '%s --help')", err, best, cmd.CommandPath())
	}
	return fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath())
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// exactArgs is cobra.ExactArgs with a message that says what is missing.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s needs %s, got %d argument(s); usage: %s", cmd.CommandPath(), what, len(args), cmd.UseLine())
		}
		return nil
	}
}
