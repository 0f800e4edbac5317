package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/natsauth"
)

// defaultExpiry is how long credentials work unless told otherwise: a
// year, so that a key that leaked unnoticed stops working by itself.
const defaultExpiry = 365 * 24 * time.Hour

func newNATSRotateCmd() *cobra.Command {
	var uo natsauth.UserOptions
	var c natsCheck
	cmd := &cobra.Command{
		Use:   "rotate DIR ID",
		Short: "Give a party a new key: a new DIR/<id>.creds, its key in server-keys for a server, its old keys revoked",
		Long: `rotate replaces a party's key: DIR/<id>.creds is made anew, a server's line
in server-keys holds its new key, and the account, signed again, revokes
the old keys. Hand the party its new file, then send the exchange SIGHUP (it
reads server-keys again) and reload nats-server (nats-server --signal
reload, or bourse admin nats-auth push with the full resolver): the old
file stops working then. With --nats URL it checks that: it pushes the
account (full resolver) or waits for the reload (memory resolver), then
checks that the server refuses the old keys and takes the new file, and
fails saying so if it does not within --wait.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := natsauth.Rotate(args[0], args[1], uo)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), path)
			if c.url == "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "bourse: "+noCheckHint(args[0]))
				return nil
			}
			return c.taken(cmd.Context(), cmd.OutOrStdout(), args[0], args[1], path)
		},
	}
	cmd.Flags().DurationVar(&uo.Expires, "expires", defaultExpiry, "how long the new credentials work (0: never)")
	c.addFlags(cmd.Flags(), "", "a NATS server to check the rotation on (and push it to, with the full resolver)", time.Minute)
	return cmd
}

func newNATSRevokeCmd() *cobra.Command {
	var c natsCheck
	cmd := &cobra.Command{
		Use:   "revoke DIR ID",
		Short: "End a party's credentials: its keys revoked in the account, its .creds and server key removed",
		Long: `revoke revokes every key of the party in the account, signed again, and
removes DIR/<id>.creds and, for a server, its line of server-keys. Reload
nats-server (nats-server --signal reload, or bourse admin nats-auth push
with the full resolver): it then refuses the keys and closes their
connections. Send the exchange SIGHUP so that it forgets a server's key.
The id stays the party's: rotate issues it a new key. With --nats URL it
checks that the server has taken the revocation: it pushes the account
(full resolver) or waits for the reload (memory resolver), then checks
that the server refuses the party's keys, and fails saying so if it does
not within --wait.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := natsauth.Revoke(args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s revoked in the account\n", args[1])
			if c.url == "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "bourse: "+noCheckHint(args[0]))
				return nil
			}
			return c.taken(cmd.Context(), cmd.OutOrStdout(), args[0], args[1], "")
		},
	}
	c.addFlags(cmd.Flags(), "", "a NATS server to check the revocation on (and push it to, with the full resolver)", time.Minute)
	return cmd
}

func newNATSListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list DIR",
		Short: "Every key the account has signed: its party, role, and when it was issued, expires and was revoked",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			es, err := natsauth.List(args[0])
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tROLE\tKEY\tISSUED\tEXPIRES\tSTATE")
			now := time.Now()
			for _, e := range es {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Role, e.Key, day(e.At), day(e.Expires), credentialState(e, now))
			}
			return tw.Flush()
		},
	}
}

// credentialState says whether e works, and for how long.
func credentialState(e natsauth.Issued, now time.Time) string {
	switch {
	case !e.Revoked.IsZero():
		return "revoked " + day(e.Revoked)
	case e.Expires.IsZero():
		return "live, never expires"
	case !now.Before(e.Expires):
		return "expired"
	case e.RotateSoon(now):
		return fmt.Sprintf("live, expires in %d days: rotate it", int(e.Expires.Sub(now).Hours()/24))
	}
	return "live"
}

func day(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.DateOnly)
}

func newNATSPushCmd() *cobra.Command {
	var url string
	var tls natsTLS
	cmd := &cobra.Command{
		Use:   "push DIR --nats URL",
		Short: "Send the market's account (after rotate or revoke) to NATS servers on the full resolver",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := tls.options()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			if err := natsauth.Push(ctx, args[0], url, opts...); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "account pushed to %s\n", url)
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "nats", "nats://127.0.0.1:4222", "a NATS server of the cluster")
	tls.addFlags(cmd.Flags())
	return cmd
}
