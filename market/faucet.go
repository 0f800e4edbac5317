package market

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// The demo's faucet grants the person at the keyboard more money, so
// that a demo that has spent its budget can trade on: `bourse admin
// grant` needs the exchange's database, which in the demo lives only
// inside its process. It is no part of the protocol (docs/protocol.md):
// only a market started with Config.Faucet serves it, and only for its
// Wallets, which no bot trades as. Each grant is a treasury grant, in the
// audit trail as the faucet's.

// FaucetSubject is where the faucet hears client id: one subject per
// client, as the protocol's requests are (its NATS has no users: anyone
// may ask for any of the wallets).
func FaucetSubject(id string) string { return "bourse.demo.faucet." + id }

// faucetActor is who the faucet's grants are recorded as.
const faucetActor = "demo-faucet"

// FaucetRequest asks for Amount (a decimal string) under RequestID: the
// same id grants once.
type FaucetRequest struct {
	Amount    decimal.Decimal `json:"amount"`
	RequestID string          `json:"request_id"`
}

// FaucetReply is what was granted and the wallet's balance after, at the
// currency's scale; or why nothing was.
type FaucetReply struct {
	Currency  string      `json:"currency,omitempty"`
	Granted   string      `json:"granted,omitempty"`
	Available string      `json:"available,omitempty"`
	Error     string      `json:"error,omitempty"`
	Code      bourse.Code `json:"code,omitempty"`
}

// serveFaucet answers the faucet's requests for each of the market's
// Wallets until the market stops (its connection closes).
func (m *Market) serveFaucet() error {
	if !m.cfg.Faucet.IsPositive() || len(m.cfg.Wallets) == 0 {
		return nil
	}
	nc, err := m.connect("")
	if err != nil {
		return err
	}
	if _, err := nc.Subscribe(FaucetSubject("*"), func(msg *nats.Msg) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		id := strings.TrimPrefix(msg.Subject, FaucetSubject(""))
		r := FaucetReply{Code: bourse.EPermission, Error: fmt.Sprintf("the demo's faucet grants to %s alone, not to %s: the bots live on their allowances", m.walletNames(), id)}
		if slices.ContainsFunc(m.cfg.Wallets, func(w Wallet) bool { return w.ID == id }) {
			r = m.faucet(ctx, id, msg.Data)
		}
		body, _ := json.Marshal(r)
		_ = msg.Respond(body)
	}); err != nil {
		return fmt.Errorf("market: faucet: %w", err)
	}
	return nc.Flush()
}

func (m *Market) walletNames() string {
	var ids []string
	for _, w := range m.cfg.Wallets {
		ids = append(ids, w.ID)
	}
	return strings.Join(ids, ", ")
}

// faucet grants client id what request data asks, within Config.Faucet.
func (m *Market) faucet(ctx context.Context, id string, data []byte) FaucetReply {
	fail := func(code bourse.Code, format string, args ...any) FaucetReply {
		return FaucetReply{Code: code, Error: fmt.Sprintf(format, args...)}
	}
	var req FaucetRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return fail(bourse.EInvalid, "not a faucet request: %v", err)
	}
	scale := Currency.Scale
	switch {
	case req.RequestID == "":
		return fail(bourse.EInvalid, "request_id is required")
	case !req.Amount.IsPositive():
		return fail(bourse.EInvalid, "amount %s: want more than 0", req.Amount)
	case req.Amount.GreaterThan(m.cfg.Faucet):
		return fail(bourse.EInvalid, "amount %s: the demo's faucet grants at most %s %s at a time", req.Amount, currency.Format(m.cfg.Faucet, scale), Currency.Code)
	case !req.Amount.Equal(req.Amount.Truncate(scale)):
		return fail(bourse.EInvalid, "amount %s: %s has %d decimal places", req.Amount, Currency.Code, scale)
	}
	_, err := m.cfg.Treasury.Grant(ctx, faucetActor, Currency.Code, id, req.Amount, "faucet/"+id+"/"+req.RequestID, "the demo's faucet")
	if err != nil {
		return fail(bourse.ErrorCode(err), "grant: %v", err)
	}
	b, err := m.cfg.Store.Ledger().Balance(ctx, currency.WalletID(Currency.Code, id))
	if err != nil {
		return fail(bourse.ErrorCode(err), "balance: %v", err)
	}
	return FaucetReply{Currency: string(Currency.Code), Granted: currency.Format(req.Amount, scale), Available: currency.Format(b.Available, scale)}
}

// AskFaucet asks the demo's faucet on nc for amount into client id's
// wallet. An error carries the faucet's code; unavailable where no demo
// with a faucet for id answers.
func AskFaucet(ctx context.Context, nc *nats.Conn, id string, amount decimal.Decimal, requestID string) (FaucetReply, error) {
	body, err := json.Marshal(FaucetRequest{Amount: amount, RequestID: requestID})
	if err != nil {
		return FaucetReply{}, err
	}
	msg, err := nc.RequestWithContext(ctx, FaucetSubject(id), body)
	if errors.Is(err, nats.ErrNoResponders) {
		return FaucetReply{}, &bourse.Error{Code: bourse.EUnavailable, Op: "demo.faucet",
			Message: "no demo's faucet answers on this NATS: only bourse demo serves one"}
	}
	if err != nil {
		return FaucetReply{}, &bourse.Error{Code: bourse.EUnavailable, Op: "demo.faucet", Message: "ask the faucet", Err: err}
	}
	var r FaucetReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		return FaucetReply{}, fmt.Errorf("demo.faucet: the reply: %w", err)
	}
	if r.Error != "" {
		return r, &bourse.Error{Code: r.Code, Op: "demo.faucet", Message: r.Error}
	}
	return r, nil
}
