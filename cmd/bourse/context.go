package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bourse/bourse/internal/atomicfile"
)

// A context is a market and who you are on it, kept under a name, as
// `nats context` and `kubectl config use-context` keep theirs: the NATS
// URL, the client id, the NATS login and TLS files, the currency. The
// commands that speak to a market as a client (bid, market, servers)
// take what their flags and the environment leave unset from the context
// in use: --context, else $BOURSE_CONTEXT, else the one `bourse context
// use` selected. Flags win, then the environment, then the context; but
// where the context says where and as whom to connect, the environment
// may not say so too (oneUnit).
//
// Each context is a file, $XDG_CONFIG_HOME/bourse/contexts/NAME.json
// (~/.config/… by default), and the selection $XDG_CONFIG_HOME/bourse/
// context; the folders are the user's alone (0700), the files too (0600),
// since a context may hold a password.

// contextSettings are the flags a context may set, by flag name: the
// connection flags every client command has.
var contextSettings = []string{"nats", "id", "nats-user", "nats-password", "nats-password-file", "nats-creds", "nats-ca", "nats-cert", "nats-key", "currency"}

// natsContext is one context as its file holds it: the flags it sets,
// by name, and what it is for.
type natsContext struct {
	Description string            `json:"description,omitempty"`
	Settings    map[string]string `json:"settings"`
}

// contextAnnotation marks the commands that take settings from a context.
const contextAnnotation = "bourse_context"

var contextName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func contextDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration folder for contexts: %w", err)
	}
	return filepath.Join(dir, "bourse"), nil
}

func contextPath(name string) (string, error) {
	if !contextName.MatchString(name) {
		return "", usagef("context name %q: want 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	dir, err := contextDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "contexts", name+".json"), nil
}

// readContext reads context name; a missing one is a usage error naming
// those there are.
func readContext(name string) (natsContext, error) {
	path, err := contextPath(name)
	if err != nil {
		return natsContext{}, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		names, _ := contextNames()
		return natsContext{}, usagef("no context %q (there are: %s); add it with bourse context add %s --nats URL --id ID", name, listOrNone(names), name)
	}
	if err != nil {
		return natsContext{}, err
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(os.Stderr, "bourse: context file %s is readable by others (mode %04o): chmod 600 %s\n", path, st.Mode().Perm(), path)
	}
	var c natsContext
	if err := json.Unmarshal(b, &c); err != nil {
		return natsContext{}, fmt.Errorf("context %s (%s): %w", name, path, err)
	}
	for k := range c.Settings {
		if !slices.Contains(contextSettings, k) {
			return natsContext{}, fmt.Errorf("context %s (%s): unknown setting %q", name, path, k)
		}
	}
	return c, nil
}

func writeContext(name string, c natsContext) error {
	path, err := contextPath(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}

func contextNames() ([]string, error) {
	dir, err := contextDir()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(dir, "contexts"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && contextName.MatchString(name) {
			names = append(names, name)
		}
	}
	return names, err
}

// selectedContext is the name `bourse context use` chose, "" if none.
func selectedContext() (string, error) {
	dir, err := contextDir()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, "context"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(b)), err
}

func selectContext(name string) error {
	dir, err := contextDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	path := filepath.Join(dir, "context")
	if name == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return atomicfile.Write(path, []byte(name+"\n"), 0o600)
}

// contextInUse is the context a command takes its settings from: named by
// --context or $BOURSE_CONTEXT, else the one selected; "" if none.
func contextInUse(fs *pflag.FlagSet) (string, error) {
	if fl := fs.Lookup("context"); fl != nil && fl.Value.String() != "" {
		return fl.Value.String(), nil
	}
	if name := os.Getenv("BOURSE_CONTEXT"); name != "" {
		return name, nil
	}
	return selectedContext()
}

// applyContext sets each flag of a client command that neither the
// command line nor the environment gives from the context in use. A flag
// X and its file form X-file are one setting: either given keeps the
// other from the context.
func applyContext(cmd *cobra.Command) error {
	if !takesContext(cmd) {
		return nil
	}
	fs := cmd.Flags()
	name, err := contextInUse(fs)
	if err != nil || name == "" {
		return err
	}
	c, err := readContext(name)
	if err != nil {
		return err
	}
	if err := oneUnit(fs, name, c); err != nil {
		return err
	}
	for _, key := range contextSettings {
		v, ok := c.Settings[key]
		fl := fs.Lookup(key)
		if !ok || v == "" || fl == nil || given(fs, key) || givenPartner(fs, key) {
			continue
		}
		if err := fl.Value.Set(v); err != nil {
			return fmt.Errorf("context %s: %s: %w", name, key, err)
		}
		_ = fs.SetAnnotation(key, fromEnvAnnotation, []string{"context " + name})
	}
	return nil
}

// connectionSettings are a context's settings that say where to connect
// and as whom to NATS: a unit, as a kubectl context's cluster and user
// are. A password sent to a URL it was not written for is given away.
var connectionSettings = []string{"nats", "nats-user", "nats-password", "nats-password-file", "nats-creds", "nats-ca", "nats-cert", "nats-key"}

// oneUnit refuses a connection made of the environment's settings and
// context name's: a URL exported for one market ($BOURSE_NATS_URL) and the
// password of the context in use would send that password there, and the
// probe of 2026-12-01 caught it so. The command line may still override a
// context's setting: that is said where it is typed.
func oneUnit(fs *pflag.FlagSet, name string, c natsContext) error {
	var own []string
	for _, key := range connectionSettings {
		if c.Settings[key] != "" {
			own = append(own, "--"+key)
		}
	}
	if len(own) == 0 {
		return nil
	}
	for _, key := range connectionSettings {
		fl := fs.Lookup(key)
		if fl == nil || fl.Changed {
			continue
		}
		if vars := fl.Annotations[fromEnvAnnotation]; len(vars) > 0 {
			return usagef("$%s gives --%s, and context %s gives the connection (%s): a context is one unit, its credentials go to its own market only. Unset $%s, give --%s on the command line, or choose no context", vars[0], key, name, strings.Join(own, " "), vars[0], key)
		}
	}
	return nil
}

// givenPartner says whether name's partner (X for X-file, X-file for X)
// is given by the command line or the environment.
func givenPartner(fs *pflag.FlagSet, name string) bool {
	partner := name + "-file"
	if base, ok := strings.CutSuffix(name, "-file"); ok {
		partner = base
	}
	return given(fs, partner)
}

// takesContext says whether cmd is a client command: it or a command
// above it is marked so.
func takesContext(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		if c.Annotations[contextAnnotation] != "" {
			return true
		}
	}
	return false
}

// markContext makes cmd (and the commands below it) take settings from a
// context, with --context to name one.
func markContext(cmd *cobra.Command, fs *pflag.FlagSet) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[contextAnnotation] = "yes"
	fs.String("context", "", "take the settings not given here or in the environment from this context (bourse context ls) instead of the one in use ($BOURSE_CONTEXT)")
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func newContextCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "context",
		Short: "Keep markets and identities under names, and choose the one the client commands use",
		Long: `context keeps, under a name, a market and who you are on it: the NATS URL,
the client id, the NATS user and password (or password file), credentials
file and TLS files, and the currency. bid, market and servers take every
setting that their flags and the environment leave unset from the context
in use: --context NAME, else $BOURSE_CONTEXT, else the one chosen with
context use. Flags win over the environment, which wins over the context,
except where the two would make one connection: a context that gives the
NATS URL or credentials is one unit, and a command in which the
environment gives either too ($BOURSE_NATS_URL, $NATS_URL, a password)
is refused, so that no context's password goes to another market.

Contexts are files in $XDG_CONFIG_HOME/bourse/contexts (~/.config/bourse/
contexts), readable by you alone, since one may hold a password: prefer
--nats-password-file or --nats-creds, which keep only the file's name.

  bourse context add demo --nats nats://127.0.0.1:4222 --id you
  bourse context use demo
  bourse bid balance
  bourse context ls`,
	}
	cmd.AddCommand(newContextAddCmd(), newContextUseCmd(), newContextLsCmd(), newContextShowCmd(), newContextRmCmd())
	return cmd
}

func newContextAddCmd() *cobra.Command {
	var description string
	var use bool
	cmd := &cobra.Command{
		Use:   "add NAME",
		Short: "Add a context, or replace one of that name, from the connection flags",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			path, err := contextPath(name)
			if err != nil {
				return err
			}
			fs := cmd.Flags()
			c := natsContext{Description: description, Settings: map[string]string{}}
			for _, key := range contextSettings {
				if fl := fs.Lookup(key); fl != nil && fl.Changed {
					c.Settings[key] = fl.Value.String()
				}
			}
			if c.Settings["nats-password"] != "" && c.Settings["nats-password-file"] != "" {
				return usagef("--nats-password and --nats-password-file both give it: keep one")
			}
			if len(c.Settings) == 0 {
				return usagef("a context needs a setting: --nats URL, --id ID, and the login your market asks for")
			}
			_, statErr := os.Stat(path)
			if err := writeContext(name, c); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			verb := "added"
			if statErr == nil {
				verb = "replaced"
			}
			fmt.Fprintf(out, "context %s %s (%s)\n", name, verb, path)
			current, err := selectedContext()
			if err != nil {
				return err
			}
			if use || current == "" {
				if err := selectContext(name); err != nil {
					return err
				}
				fmt.Fprintf(out, "now using context %s\n", name)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.String("nats", "", "NATS server URL(s), comma-separated")
	fs.String("id", "", "your client name")
	var login natsLogin
	fs.StringVar(&login.User, "nats-user", "", "NATS user")
	fs.StringVar(&login.Password, "nats-password", "", "NATS password, kept in the context's file (prefer --nats-password-file)")
	fs.StringVar(&login.PasswordFile, "nats-password-file", "", "the file the NATS password is in (the context keeps its name)")
	fs.StringVar(&login.Creds, "nats-creds", "", "NATS credentials file")
	var tlsf natsTLS
	fs.StringVar(&tlsf.CA, "nats-ca", "", "PEM file of the CA that signed the NATS servers' certificates")
	fs.StringVar(&tlsf.Cert, "nats-cert", "", "PEM file of your client certificate")
	fs.StringVar(&tlsf.Key, "nats-key", "", "PEM file of the client certificate's key")
	fs.String("currency", "", "currency of offers, balance and statement")
	fs.StringVar(&description, "description", "", "what the context is for")
	fs.BoolVar(&use, "use", false, "use it from now on (the first context added is used anyway)")
	return cmd
}

func newContextUseCmd() *cobra.Command {
	var none bool
	cmd := &cobra.Command{
		Use:   "use NAME",
		Short: "Use a context from now on (--none: no context)",
		Args: func(cmd *cobra.Command, args []string) error {
			if none {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if none {
				if err := selectContext(""); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "no context in use")
				return nil
			}
			if _, err := readContext(args[0]); err != nil {
				return err
			}
			if err := selectContext(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "now using context %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&none, "none", false, "use no context")
	return cmd
}

// contextLine is a context as ls and show --json print it: the password
// never, only whether there is one.
type contextLine struct {
	Name        string            `json:"name"`
	Current     bool              `json:"current"`
	Description string            `json:"description,omitempty"`
	Settings    map[string]string `json:"settings"`
}

func (c natsContext) line(name string, current bool) contextLine {
	settings := map[string]string{}
	for k, v := range c.Settings {
		if k == "nats-password" && v != "" {
			v = "(set)"
		}
		settings[k] = v
	}
	return contextLine{Name: name, Current: current, Description: c.Description, Settings: settings}
}

func newContextLsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the contexts, the one in use marked *",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			names, err := contextNames()
			if err != nil {
				return err
			}
			current, err := contextInUse(cmd.Flags())
			if err != nil {
				return err
			}
			var lines []contextLine
			for _, name := range names {
				c, err := readContext(name)
				if err != nil {
					return err
				}
				lines = append(lines, c.line(name, name == current))
			}
			out := cmd.OutOrStdout()
			if !asJSON && len(lines) == 0 {
				fmt.Fprintln(out, "no contexts: add one with bourse context add NAME --nats URL --id ID")
				return nil
			}
			if lines == nil {
				lines = []contextLine{}
			}
			return printList(out, nil, asJSON, lines, " \tNAME\tNATS\tID\tDESCRIPTION", func(l contextLine) []any {
				mark := ""
				if l.Current {
					mark = "*"
				}
				return []any{mark, l.Name, or(l.Settings["nats"], "-"), or(l.Settings["id"], "-"), or(l.Description, "-")}
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}

func newContextShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [NAME]",
		Short: "Show a context's settings (the one in use by default); a password shows as (set)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			current, err := contextInUse(cmd.Flags())
			if err != nil {
				return err
			}
			name := current
			if len(args) == 1 {
				name = args[0]
			}
			if name == "" {
				return usagef("no context in use: name one (bourse context ls), or choose one with bourse context use NAME")
			}
			c, err := readContext(name)
			if err != nil {
				return err
			}
			l := c.line(name, name == current)
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, l)
			}
			path, _ := contextPath(name)
			tw := table(out)
			row(tw, "context", name)
			row(tw, "file", path)
			row(tw, "in use", l.Current)
			if l.Description != "" {
				row(tw, "description", l.Description)
			}
			for _, key := range contextSettings {
				if v, ok := l.Settings[key]; ok {
					row(tw, "--"+key, v)
				}
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}

func newContextRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a context",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if _, err := readContext(name); err != nil {
				return err
			}
			path, _ := contextPath(name)
			if err := os.Remove(path); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "context %s removed\n", name)
			if current, err := selectedContext(); err == nil && current == name {
				if err := selectContext(""); err != nil {
					return err
				}
				fmt.Fprintln(out, "no context in use now")
			}
			return nil
		},
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
