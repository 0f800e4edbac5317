package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bourse/bourse/natsauth"
)

// natsCheck is where and how long rotate, revoke and check look for a
// NATS server to have taken the account.
type natsCheck struct {
	url  string
	wait time.Duration
	tls  natsTLS
}

func (c *natsCheck) addFlags(f *pflag.FlagSet, url, what string, wait time.Duration) {
	f.StringVar(&c.url, "nats", url, what)
	f.DurationVar(&c.wait, "wait", wait, "how long to wait for the NATS server to take the account (a reload takes a moment)")
	c.tls.addFlags(f)
}

// await waits for the NATS server at c.url to take the account of dir
// (natsauth.Verify), trying again until c.wait has passed.
func (c *natsCheck) await(ctx context.Context, dir string) error {
	opts, err := c.tls.options()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(c.wait)
	for {
		vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = natsauth.Verify(vctx, dir, c.url, opts...)
		cancel()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// taken checks, after a rotation or revocation of id in dir, that the
// NATS server at c.url has taken it: with the full resolver it pushes the
// account first; with the memory resolver it waits for the operator's
// reload. newCreds, after a rotation, must connect too.
func (c *natsCheck) taken(ctx context.Context, w io.Writer, dir, id, newCreds string) error {
	full, err := natsauth.FullResolver(dir)
	if err != nil {
		return err
	}
	opts, err := c.tls.options()
	if err != nil {
		return err
	}
	if full {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := natsauth.Push(pctx, dir, c.url, opts...)
		cancel()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "account pushed to %s\n", c.url)
	} else {
		fmt.Fprintf(w, "waiting up to %s for nats-server at %s to take the account: reload it now (nats-server --signal reload)\n", c.wait, c.url)
	}
	if err := c.await(ctx, dir); err != nil {
		return err
	}
	if newCreds != "" {
		nc, err := nats.Connect(c.url, append(opts, nats.UserCredentials(newCreds), nats.NoReconnect(), nats.Timeout(5*time.Second))...)
		if err != nil {
			return fmt.Errorf("nats-server at %s refuses %s's new credentials %s: %w", c.url, id, newCreds, err)
		}
		nc.Close()
		fmt.Fprintf(w, "nats-server at %s refuses %s's old keys and takes the new one\n", c.url, id)
		return nil
	}
	fmt.Fprintf(w, "nats-server at %s refuses %s's keys\n", c.url, id)
	return nil
}

func newNATSCheckCmd() *cobra.Command {
	var c natsCheck
	cmd := &cobra.Command{
		Use:   "check DIR --nats URL",
		Short: "Check that a NATS server has taken the account as last signed: it refuses every revoked key",
		Long: `check tells whether the NATS server at --nats has taken the market's
account as rotate or revoke last signed it: every revocation or rotation
also revokes a probe key of no party (DIR/revocation-probe), so a server
that refuses the probe refuses every key the account revokes, and one that
still takes it has not learnt the account. Run it after nats-server
--signal reload (or push): it tries again for --wait, as a reload takes a
moment. It fails, saying what to look for, where the server still takes
revoked keys: nats-server 2.9 (Debian's) cannot reload a configuration
whose JetStream store was given with -sd, and says so only in its log.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.await(cmd.Context(), args[0]); err != nil {
				return err
			}
			es, err := natsauth.List(args[0])
			if err != nil {
				return err
			}
			var revoked []string
			for _, e := range es {
				if !e.Revoked.IsZero() && !slices.Contains(revoked, e.ID) {
					revoked = append(revoked, e.ID)
				}
			}
			what := "it revokes nothing yet"
			if len(revoked) > 0 {
				what = "it refuses every key revoked (of " + strings.Join(revoked, ", ") + ")"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "nats-server at %s has taken the account: %s\n", c.url, what)
			return nil
		},
	}
	c.addFlags(cmd.Flags(), "nats://127.0.0.1:4222", "the NATS server to check", 10*time.Second)
	return cmd
}

// noCheckHint is what rotate and revoke say without --nats: the change
// is made, and the operator checks it after the reload.
func noCheckHint(dir string) string {
	return fmt.Sprintf("reload nats-server (nats-server --signal reload, or push), then check that it took the change: bourse admin nats-auth check %s --nats URL", dir)
}
