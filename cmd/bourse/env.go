package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Flags may fall back to environment variables: settings a person gives
// once per shell (where the market is, who they are), and secrets, which
// on a command line anyone who can run ps reads.
const (
	envAnnotation     = "bourse_env"      // the variables a flag falls back to, first set wins
	fromEnvAnnotation = "bourse_from_env" // the variable a flag's value came from
)

// bindEnv makes flag name of fs fall back to the environment variables
// vars where the command line does not give it, and says so in its help.
func bindEnv(fs *pflag.FlagSet, name string, vars ...string) {
	f := fs.Lookup(name)
	if f == nil {
		panic("bindEnv: no flag --" + name)
	}
	f.Usage += " ($" + strings.Join(vars, ", $") + ")"
	_ = fs.SetAnnotation(name, envAnnotation, vars)
}

// applyEnv sets each flag of cmd that the command line left out from the
// first of its variables that is set. A flag X and its file form X-file
// are one setting: either given on the command line keeps the other from
// the environment, so that the command line wins whole.
func applyEnv(cmd *cobra.Command) error {
	fs := cmd.Flags()
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		vars := f.Annotations[envAnnotation]
		if err != nil || f.Changed || len(vars) == 0 || partnerChanged(fs, f.Name) {
			return
		}
		for _, v := range vars {
			val := os.Getenv(v)
			if val == "" {
				continue
			}
			if serr := f.Value.Set(val); serr != nil {
				err = fmt.Errorf("$%s (for --%s): %w", v, f.Name, serr)
				return
			}
			_ = fs.SetAnnotation(f.Name, fromEnvAnnotation, []string{v})
			return
		}
	})
	return err
}

func partnerChanged(fs *pflag.FlagSet, name string) bool {
	partner := name + "-file"
	if base, ok := strings.CutSuffix(name, "-file"); ok {
		partner = base
	}
	p := fs.Lookup(partner)
	return p != nil && p.Changed
}

// given says whether flag name has a value from the command line or the
// environment, for settings that override a configuration file.
func given(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && (f.Changed || len(f.Annotations[fromEnvAnnotation]) > 0)
}

// readSecret is a secret given as itself or in a file (its first line),
// flag naming both for errors.
func readSecret(flag, value, file string) (string, error) {
	switch {
	case value != "" && file != "":
		return "", usagef("--%s and --%s-file both give it: keep one", flag, flag)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", usagef("--%s-file: %w", flag, err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimRight(line, "\r"), nil
	}
	return value, nil
}
