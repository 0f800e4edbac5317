package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/natsauth"
)

// newNATSAuthCmd makes operator-mode keys: what nsc would, for a market.
func newNATSAuthCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nats-auth",
		Short: "Make the operator, account and per-party credentials of a market in NATS operator mode",
		Long: `nats-auth makes what NATS's decentralized authentication needs, without
nsc: an operator, a system account, the market's account with JetStream
limits, and a credentials file per party whose permissions hold it to its
own subjects (docs/protocol.md, "Identity"). The seeds (*.nk) and
credentials files (*.creds) are secrets; the folder's nats-server.conf
trusts the operator and preloads the accounts.

  bourse admin nats-auth init /etc/bourse/nats --store-dir /var/lib/bourse/jetstream
  bourse admin nats-auth user /etc/bourse/nats --client alice --server gpu1
  nats-server -c /etc/bourse/nats/nats-server.conf
  bourse exchange --nats-creds /etc/bourse/nats/exchange.creds --db …

Credentials expire (--expires, a year by default); rotate gives a party a
new key and revokes its old one, revoke ends a party's credentials, check
says whether a NATS server has taken them, list says who holds what until
when (docs/operations.md, "Credentials").`,
	}
	var o natsauth.Options
	initCmd := &cobra.Command{
		Use:   "init DIR",
		Short: "Make the operator, the accounts, the exchange's credentials and nats-server.conf in DIR",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := natsauth.Init(args[0], o)
			if err != nil {
				return err
			}
			for _, f := range files {
				fmt.Fprintln(cmd.OutOrStdout(), f)
			}
			return nil
		},
	}
	f := initCmd.Flags()
	f.StringVar(&o.Operator, "operator", "bourse", "the operator's name")
	f.StringVar(&o.Account, "account", "BOURSE", "the market's account name")
	f.Int64Var(&o.DiskBytes, "js-disk", 10<<30, "JetStream bytes on disk for the account's streams")
	f.Int64Var(&o.MemoryBytes, "js-memory", 1<<30, "JetStream bytes in memory for the account's streams")
	f.StringVar(&o.Resolver, "resolver", "memory", `how nats-server knows accounts: memory (preloaded from the file) or full (NATS's resolver, for a cluster)`)
	f.StringVar(&o.ResolverDir, "resolver-dir", "/var/lib/bourse/nats-jwt", "where the full resolver keeps account JWTs on each server")
	f.StringVar(&o.Host, "host", "127.0.0.1", "the address nats-server listens on")
	f.IntVar(&o.Port, "port", 4222, "the port nats-server listens on")
	f.StringVar(&o.StoreDir, "store-dir", "/var/lib/bourse/jetstream",
		`the JetStream store, written into nats-server.conf so that a reload takes revocations on nats-server 2.9 ("": give it with -sd, and restart after each)`)
	f.DurationVar(&o.Expires, "expires", defaultExpiry, "how long the exchange's credentials work (0: never)")
	f.StringVar(&o.Sync, "sync-interval", natsauth.SyncAlways, "JetStream's sync_interval: always (every write on disk before it is acknowledged), a duration, or default (nats-server's own; nats-server before 2.10 takes no other)")

	var clients, servers, viewers []string
	var exchangeID string
	var uo natsauth.UserOptions
	userCmd := &cobra.Command{
		Use:   "user DIR --client ID … --server ID … --viewer ID …",
		Short: "Make a credentials file per client, server and viewer (DIR/<id>.creds)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(clients)+len(servers)+len(viewers) == 0 && exchangeID == "" {
				return errors.New("name the parties: --client ID, --server ID or --viewer ID (repeat), or --exchange ID")
			}
			type party struct{ role, id string }
			var ps []party
			if exchangeID != "" {
				ps = append(ps, party{natsauth.RoleExchange, exchangeID})
			}
			for _, c := range clients {
				ps = append(ps, party{natsauth.RoleClient, c})
			}
			for _, s := range servers {
				ps = append(ps, party{natsauth.RoleServer, s})
			}
			for _, v := range viewers {
				ps = append(ps, party{natsauth.RoleViewer, v})
			}
			for _, p := range ps {
				path, err := natsauth.User(args[0], p.role, p.id, uo)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), path)
			}
			return nil
		},
	}
	userCmd.Flags().StringArrayVar(&clients, "client", nil, "a client's id (repeat)")
	userCmd.Flags().StringArrayVar(&servers, "server", nil, "a GPU server's id (repeat)")
	userCmd.Flags().StringArrayVar(&viewers, "viewer", nil, "a reader of the market data only, such as the console (repeat)")
	userCmd.Flags().StringVar(&exchangeID, "exchange", "", "another exchange user (init makes one, exchange)")
	userCmd.Flags().DurationVar(&uo.Expires, "expires", defaultExpiry, "how long the credentials work (0: never)")
	cmd.AddCommand(initCmd, userCmd, newNATSRotateCmd(), newNATSRevokeCmd(), newNATSCheckCmd(), newNATSListCmd(), newNATSPushCmd())
	return cmd
}
