// Package bidder is the client side of the market over NATS: a Client that
// makes offers (one, or a job array's: OfferArray), takes counter-offers,
// watches contract events, stops contracts and reads balances and
// statements. What to offer is decided in package strategy, which links
// no NATS: a Client is the strategy.Exchange that strategy.Negotiate
// trades a job on.
package bidder

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	json "github.com/go-json-experiment/json/v1"
	"github.com/nats-io/nats.go"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// DefaultCurrency is the currency Balance and Statement read when neither
// their argument nor Config.Currency names one: the demo market's credits.
const DefaultCurrency = "CRED"

// Config configures a Client. ID is required; every other zero value
// works: a local NATS server, no credentials, CRED, 10s per request, two
// retries.
type Config struct {
	ID   string
	URL  string     // NATS URL; nats://127.0.0.1:4222 if empty
	Conn *nats.Conn // an open connection instead of URL; it must use ID's inbox prefix
	// Credentials authenticate a connection that Dial opens.
	Credentials Credentials
	// Options are extra NATS options (TLS, handlers) used with URL.
	Options []nats.Option
	// Currency is what Balance and Statement read when asked for "";
	// DefaultCurrency if empty.
	Currency string
	// Timeout bounds each request; an offer waits for negotiation and the
	// start too (2s + 2s by default), so 10s.
	Timeout time.Duration
	// Retries is how often a request whose outcome is unknown (no answer,
	// or unavailable, deadline_exceeded or internal) is sent again with the
	// same request id, which makes it safe, after a wait of 250 ms
	// doubling up to 4 s, and how often one refused as rate_limited is sent
	// again after the wait the exchange gave. 2 if zero; negative for none.
	Retries int
}

// Credentials are how a client proves its name to NATS: a credentials
// file (a user JWT and its nkey seed), or a user and password as in
// docs/nats-server.conf. The zero value sends none.
type Credentials struct {
	File     string
	User     string
	Password string
}

func (c Credentials) options() []nats.Option {
	var opts []nats.Option
	if c.File != "" {
		opts = append(opts, nats.UserCredentials(c.File))
	}
	if c.User != "" || c.Password != "" {
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	return opts
}

// Client is safe for concurrent use.
type Client struct {
	cfg Config
	nc  *nats.Conn
	own bool
	// denied ends, with its cause an EPermission error, once NATS refuses
	// this connection one of the client's own subjects: its user may not
	// act as cfg.ID, and every request would wait out its timeout for an
	// answer that cannot come.
	denied context.Context
	deny   context.CancelCauseFunc
}

var _ strategy.Exchange = (*Client)(nil)

// Dial connects a client.
func Dial(cfg Config) (*Client, error) {
	if err := protocol.CheckID(cfg.ID); err != nil {
		return nil, &bourse.Error{Code: bourse.EInvalid, Field: "id", Message: err.Error()}
	}
	if cfg.URL == "" {
		cfg.URL = nats.DefaultURL
	}
	if cfg.Currency == "" {
		cfg.Currency = DefaultCurrency
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Retries < 0 {
		cfg.Retries = 0
	} else if cfg.Retries == 0 {
		cfg.Retries = 2
	}
	c := &Client{cfg: cfg, nc: cfg.Conn}
	c.denied, c.deny = context.WithCancelCause(context.Background())
	if c.nc != nil {
		if err := protocol.CheckInbox(c.nc.NewRespInbox(), cfg.ID); err != nil {
			return nil, &bourse.Error{Code: bourse.EInvalid, Op: "bidder.Dial", Field: "Conn", Message: err.Error()}
		}
	}
	if c.nc == nil {
		opts := append([]nats.Option{
			nats.Name("bourse-bidder-" + cfg.ID),
			nats.CustomInboxPrefix(protocol.InboxPrefix(cfg.ID)),
			nats.MaxReconnects(-1),
			nats.ErrorHandler(c.asyncError),
		}, cfg.Credentials.options()...)
		opts = append(opts, cfg.Options...)
		nc, err := nats.Connect(cfg.URL, opts...)
		if isAuthError(err) {
			return nil, &bourse.Error{Code: bourse.EPermission, Op: "bidder.Dial", Message: "NATS at " + cfg.URL + " refused the credentials", Err: err}
		}
		if err != nil {
			return nil, &bourse.Error{Code: bourse.EUnavailable, Op: "bidder.Dial", Message: "connect to NATS at " + cfg.URL, Err: err}
		}
		c.nc, c.own = nc, true
	}
	return c, nil
}

// isAuthError says whether NATS refused a connection's credentials, not
// its address: a wrong password is no reason to ask whether NATS runs.
func isAuthError(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAccountAuthExpired)
}

// asyncError is the connection's handler of NATS's asynchronous errors. A
// permissions violation can only concern the client's own subjects (its
// requests, inbox and deliveries, the only ones it uses): its user may not
// act as its ID. Requests then fail at once rather than time out, and
// nothing is printed, where NATS's default handler would print each
// violation to stderr.
func (c *Client) asyncError(_ *nats.Conn, _ *nats.Subscription, err error) {
	if errors.Is(err, nats.ErrPermissionViolation) {
		c.deny(&bourse.Error{Code: bourse.EPermission, Op: "bidder", Field: "id",
			Message: fmt.Sprintf("this NATS user may not act as client %s", c.cfg.ID), Err: err})
	}
}

// Close closes the connection if Dial opened it.
func (c *Client) Close() {
	if c.own {
		c.nc.Close()
	}
}

// ID is the client's name.
func (c *Client) ID() string { return c.cfg.ID }

// Currency is the currency Balance and Statement read by default.
func (c *Client) Currency() string { return c.cfg.Currency }

// request sends verb with body and decodes the reply into out. A request
// whose outcome is unknown is sent again under the same body, and so the
// same request id, within Config.Retries: one that got no answer, and one
// answered unavailable, deadline_exceeded or internal (the exchange may
// have done it: an offer's transaction may have committed as the database
// went away). Every write carries a request id, so a retry returns the
// first try's outcome. Retries wait retryWait, growing; one refused as
// rate_limited waits as long as the exchange says.
func (c *Client) request(ctx context.Context, verb string, body, out any) error {
	data, err := protocol.Marshal(body)
	if err != nil {
		return fmt.Errorf("bidder: encode %s: %w", verb, err)
	}
	subj := protocol.ClientSubject(c.cfg.ID, verb)
	var msg *nats.Msg
	for attempt := 0; ; attempt++ {
		if err := context.Cause(c.denied); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		req := nats.NewMsg(subj)
		req.Data = data
		if dl, ok := rctx.Deadline(); ok {
			// An exchange that takes the request up after this does
			// nothing with it: this try will have gone.
			req.Header.Set(protocol.DeadlineHeader, dl.UTC().Format(time.RFC3339Nano))
		}
		stop := context.AfterFunc(c.denied, cancel)
		msg, err = c.nc.RequestMsgWithContext(rctx, req)
		stop()
		cancel()
		if denied := context.Cause(c.denied); denied != nil && err != nil {
			return denied
		}
		var wait time.Duration
		if err == nil {
			err = natswire.DecodeError(msg)
			var be *bourse.Error
			if !errors.As(err, &be) || attempt >= c.cfg.Retries {
				break
			}
			switch be.Code {
			case bourse.ERateLimited: // nothing was done
				wait = time.Duration(be.RetryAfterMS) * time.Millisecond
			case bourse.EUnavailable, bourse.EDeadlineExceeded, bourse.EInternal:
				wait = retryWait(attempt)
			default:
				return err
			}
		} else {
			if ctx.Err() != nil || attempt >= c.cfg.Retries || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders)) {
				return wireError(verb, err)
			}
			err, wait = wireError(verb, err), retryWait(attempt)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(msg.Data, out); err != nil {
		return fmt.Errorf("bidder: decode %s reply: %w", verb, err)
	}
	ordered(out)
	return nil
}

// ordered puts the counter-offers that a reply or an event v carries in
// their one order (strategy.CompareCounters), as they arrive: they come
// in the order their servers answered, which changes from one offer to
// the next, and every user of a Client (bourse bid's --take N, --auto,
// the strategies) numbers and takes them in this one.
func ordered(v any) {
	switch r := v.(type) {
	case *protocol.OfferReply:
		strategy.SortCounters(r.Counters)
	case *protocol.QuoteReply:
		strategy.SortCounters(r.Counters)
	case *protocol.Event:
		strategy.SortCounters(r.Counters)
	}
}

// retryWait is how long the retry after attempt waits: 250 ms, doubling
// up to 4 s, less a random part of up to a half, so that clients cut off
// together do not all come back at once.
func retryWait(attempt int) time.Duration {
	d := min(250*time.Millisecond<<min(attempt, 4), 4*time.Second)
	return d - rand.N(d/2)
}

func wireError(verb string, err error) error {
	code := bourse.EUnavailable
	msg := "the exchange did not answer " + verb
	if errors.Is(err, nats.ErrNoResponders) {
		msg = "no exchange is listening (is one running, and can it reach its database and the usage stream?)"
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
		code = bourse.EDeadlineExceeded
	}
	return &bourse.Error{Code: code, Op: "bidder." + verb, Message: msg, Err: err}
}

// Offer makes an offer. The reply holds the contract, or the counter-offers
// of every matching server when none accepted, cheapest first
// (strategy.CompareCounters). requestID makes a retry
// safe: the same id returns the first answer's contract.
func (c *Client) Offer(ctx context.Context, requestID string, t contract.Terms) (protocol.OfferReply, error) {
	var r protocol.OfferReply
	err := c.request(ctx, protocol.VerbOffer, protocol.OfferRequest{RequestID: requestID, Terms: t}, &r)
	return r, err
}

// Take takes a counter-offer; it fails with capacity_gone if the server's
// GPUs were taken meanwhile.
func (c *Client) Take(ctx context.Context, requestID string, k contract.Counter) (protocol.OfferReply, error) {
	return c.TakeResume(ctx, requestID, "", k)
}

// TakeResume takes a counter-offer that answered a resume of the
// suspended contract (Take if suspended is empty): the contract made
// continues its job.
func (c *Client) TakeResume(ctx context.Context, requestID, suspended string, k contract.Counter) (protocol.OfferReply, error) {
	t := k.Terms
	t.Server = k.Server
	var r protocol.OfferReply
	err := c.request(ctx, protocol.VerbOffer, protocol.OfferRequest{RequestID: requestID, Terms: t, Counter: k.ID, Resumes: suspended}, &r)
	return r, err
}

// Resume offers new terms for the job of a suspended contract.
func (c *Client) Resume(ctx context.Context, requestID, suspended string, t contract.Terms) (protocol.OfferReply, error) {
	var r protocol.OfferReply
	err := c.request(ctx, protocol.VerbOffer, protocol.OfferRequest{RequestID: requestID, Terms: t, Resumes: suspended}, &r)
	return r, err
}

// Kill stops a contract's job for good; the settlement follows as an event.
func (c *Client) Kill(ctx context.Context, id string) (protocol.ContractView, error) {
	var r protocol.ContractView
	err := c.request(ctx, protocol.VerbKill, protocol.ControlRequest{RequestID: "kill-" + id, Contract: id}, &r)
	return r, err
}

// Suspend stops a contract's job so that it can resume under a new offer.
func (c *Client) Suspend(ctx context.Context, id string) (protocol.ContractView, error) {
	var r protocol.ContractView
	err := c.request(ctx, protocol.VerbSuspend, protocol.ControlRequest{RequestID: "suspend-" + id, Contract: id}, &r)
	return r, err
}

// Contract reads one of the client's contracts.
func (c *Client) Contract(ctx context.Context, id string) (protocol.ContractView, error) {
	var r protocol.ContractView
	err := c.request(ctx, protocol.VerbContract, protocol.ContractRequest{Contract: id}, &r)
	return r, err
}

// Contracts lists the client's contracts, newest first.
func (c *Client) Contracts(ctx context.Context, limit int) ([]protocol.ContractView, error) {
	var r protocol.ContractsReply
	err := c.request(ctx, protocol.VerbContracts, protocol.ContractsRequest{Limit: limit}, &r)
	return r.Contracts, err
}

// Balance reads the client's wallet in a currency, Config.Currency if cur
// is empty, with the currency's scale: the decimal places its amounts have
// (a prepayment may have no more).
func (c *Client) Balance(ctx context.Context, cur string) (protocol.BalanceReply, error) {
	if cur == "" {
		cur = c.cfg.Currency
	}
	var r protocol.BalanceReply
	err := c.request(ctx, protocol.VerbBalance, protocol.BalanceRequest{Currency: cur}, &r)
	return r, err
}

// Statement reads a page of the client's wallet statement in a currency
// (Config.Currency if cur is empty): the entries after sequence number
// after, at most limit of them.
func (c *Client) Statement(ctx context.Context, cur string, after int64, limit int) ([]currency.Entry, error) {
	if cur == "" {
		cur = c.cfg.Currency
	}
	var r protocol.StatementReply
	err := c.request(ctx, protocol.VerbStatement, protocol.StatementRequest{Currency: cur, After: after, Limit: limit}, &r)
	return r.Entries, err
}

// Events delivers the client's contract events until ctx ends. The channel
// is buffered; events that find it full are dropped (the contract record
// is the truth: read it with Contract). Only an accepted event carries the
// whole contract; the later ones carry what they changed
// (protocol.Changed), to merge with protocol.ContractView.Apply. Watch merges
// them for you.
func (c *Client) Events(ctx context.Context, buffer int) (<-chan protocol.Event, error) {
	return subscribe[protocol.Event](ctx, c.nc, protocol.DeliverSubject(c.cfg.ID, protocol.DeliverEvent), buffer)
}
