package canary

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Market is the exchange as the canary's client speaks to it, over the
// wire like any client (bidder.Client is one).
type Market interface {
	Servers(ctx context.Context, cur string) ([]protocol.Server, error)
	Offer(ctx context.Context, requestID string, t contract.Terms) (protocol.OfferReply, error)
	Take(ctx context.Context, requestID string, k contract.Counter) (protocol.OfferReply, error)
}

// Store is where the runner reads the contract as the exchange settled
// it, and keeps the result (exchange.Store is one): the exchange's
// database, which no server or client reaches.
type Store interface {
	Contract(ctx context.Context, id string) (contract.Contract, error)
	PutCanary(ctx context.Context, r Result) error
}

// Canary is one audit: a job of GPUs (of Model, where named) on Server,
// what it truly uses, the price it offers, and how long it may take.
type Canary struct {
	Server string
	GPUs   int
	Model  string
	// Job is the job to run, whose use Truth states; nil runs the
	// synthetic job of the truth (Truth.Profile), which needs a
	// Duration.
	Job   *contract.JobSpec
	Truth Truth
	// P and Q are the prices offered; with P nil, the server's ask for
	// the class (its least price), so that a server that takes what it
	// asks takes the canary as it would anyone's offer.
	P, Q contract.Curve
	// TimeLimit is the contract's; zero for twice the truth's Duration
	// and a minute, for a start that is slow.
	TimeLimit time.Duration
	// Wait is how long the runner waits for the contract to settle
	// before it judges it as it stands (inconclusive, if not settled);
	// zero for the time limit and two minutes.
	Wait time.Duration
}

// Runner runs canaries as Client, paying in Currency (of Scale) from its
// wallet: offers through Market, reads the settled contract from and
// writes the result to Store.
type Runner struct {
	Market   Market
	Store    Store
	Client   string
	Currency string
	Scale    int32
	// RequestID makes each offer's request id; it should make ids like
	// any client's (the command line's).
	RequestID func() string
	// Now and Sleep are the runner's clock; Poll how often it reads the
	// contract while it waits (1 s if zero).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	Poll  time.Duration
}

// Run runs canary c: offers it, takes the server's cheapest counter-offer
// if it answers with one, waits for the contract to end (at most c.Wait),
// judges it (Judge) and keeps the result. An offer that makes no contract
// (the server refused, or is not live) is an error, and no result: there
// was nothing to judge.
func (r *Runner) Run(ctx context.Context, c Canary) (Result, error) {
	t, err := r.Terms(ctx, c)
	if err != nil {
		return Result{}, err
	}
	id, err := r.offer(ctx, t, c.Truth)
	if err != nil {
		return Result{}, err
	}
	wait := c.Wait
	if wait <= 0 {
		wait = t.TimeLimit + 2*time.Minute
	}
	return r.Await(ctx, id, c.Truth, r.Now().Add(wait))
}

// Terms are the canary's offer: to c.Server alone, the whole prepayment
// it can cost escrowed (so that it is never cut short for want of
// money), and nothing that says canary.
func (r *Runner) Terms(ctx context.Context, c Canary) (contract.Terms, error) {
	if err := c.Truth.Check(); err != nil {
		return contract.Terms{}, err
	}
	job := c.Job
	if job == nil {
		if c.Truth.Duration <= 0 {
			return contract.Terms{}, &bourse.Error{Code: bourse.EInvalid, Op: "canary", Field: "duration", Message: "a synthetic canary needs the duration of its job"}
		}
		job = c.Truth.Profile()
	}
	limit := c.TimeLimit
	if limit <= 0 {
		if c.Truth.Duration <= 0 {
			return contract.Terms{}, &bourse.Error{Code: bourse.EInvalid, Op: "canary", Field: "time_limit", Message: "a job of no known duration needs a time limit"}
		}
		limit = 2*time.Duration(c.Truth.Duration) + time.Minute
	}
	if limit < time.Duration(c.Truth.Duration) {
		return contract.Terms{}, &bourse.Error{Code: bourse.EInvalid, Op: "canary", Field: "time_limit",
			Message: fmt.Sprintf("%v is shorter than the job's %v: the canary would be cut short", limit, time.Duration(c.Truth.Duration))}
	}
	t := contract.Terms{Client: r.Client, Currency: r.Currency, GPUs: max(c.GPUs, 1), Class: contract.Class{Model: c.Model},
		TimeLimit: limit, P: c.P, Q: c.Q, Server: c.Server, Job: job}
	if t.P == nil {
		if err := r.askPrice(ctx, &t); err != nil {
			return t, err
		}
	}
	t.Prepayment = t.CappedPrepayment(r.Scale)
	return t, nil
}

// askPrice prices t at its server's ask: the curves of the first class of
// the model asked for (any, where none is) with GPUs enough.
func (r *Runner) askPrice(ctx context.Context, t *contract.Terms) error {
	ss, err := r.Market.Servers(ctx, r.Currency)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(ss, func(s protocol.Server) bool { return s.ID == t.Server })
	if i < 0 {
		return &bourse.Error{Code: bourse.ENoMatch, Op: "canary", Field: "server", Message: fmt.Sprintf("%s is not a live server of %s", t.Server, r.Currency)}
	}
	s := ss[i]
	if s.Runs != nil {
		if err := (*contract.Runs)(s.Runs).Refuses(t.Job); err != nil {
			return err
		}
	}
	if s.Ask != nil {
		for _, c := range s.Ask.Classes {
			if (t.Class.Model == "" || c.Model == t.Class.Model) && c.GPUs >= t.GPUs && c.Priced() {
				t.P, t.Q = c.P, c.Q
				return nil
			}
		}
	}
	return &bourse.Error{Code: bourse.EInvalid, Op: "canary", Field: "price",
		Message: fmt.Sprintf("%s asks no price for %d GPU(s) of %s: name the price to offer", t.Server, t.GPUs, or(t.Class.Model, "any model"))}
}

// offer makes the offer, and takes its server's cheapest counter-offer
// where it answers with counters that leave the job its whole truth's
// time: the contract's id, or why there is none. A counter with a
// shorter time limit (a fair-use server's) would cut the job short and
// make an honest meter look as if it under-reported.
func (r *Runner) offer(ctx context.Context, t contract.Terms, truth Truth) (string, error) {
	reply, err := r.Market.Offer(ctx, r.RequestID(), t)
	if err != nil {
		return "", err
	}
	if reply.Contract == nil {
		var ks []contract.Counter
		for _, k := range reply.Counters {
			if k.Server != t.Server {
				continue
			}
			if k.Terms.TimeLimit < time.Duration(truth.Duration) {
				reply.Rejections = append(reply.Rejections, protocol.Rejection{Server: k.Server,
					Reason: fmt.Sprintf("countered with a time limit of %v, shorter than the job's %v", k.Terms.TimeLimit, time.Duration(truth.Duration))})
				continue
			}
			ks = append(ks, k)
		}
		slices.SortStableFunc(ks, func(a, b contract.Counter) int { return a.Terms.FullUsePrice().Cmp(b.Terms.FullUsePrice()) })
		if len(ks) > 0 {
			if reply, err = r.Market.Take(ctx, r.RequestID(), ks[0]); err != nil {
				return "", err
			}
		}
	}
	if reply.Contract == nil {
		var why []string
		for _, rej := range reply.Rejections {
			why = append(why, rej.Server+": "+rej.Reason)
		}
		return "", &bourse.Error{Code: bourse.ERejected, Op: "canary", Field: "server",
			Message: fmt.Sprintf("%s made no contract of the canary's offer (%s): nothing to judge", t.Server, or(strings.Join(why, "; "), "no answer"))}
	}
	return reply.Contract.ID, nil
}

// Await waits until contract id has ended or deadline has passed, reading
// it from the store every Poll; then judges it by truth and keeps the
// result. A contract still running at the deadline is judged so:
// inconclusive.
func (r *Runner) Await(ctx context.Context, id string, truth Truth, deadline time.Time) (Result, error) {
	poll := r.Poll
	if poll <= 0 {
		poll = time.Second
	}
	for {
		c, err := r.Store.Contract(ctx, id)
		if err != nil {
			return Result{}, err
		}
		if c.Ended() || !r.Now().Before(deadline) {
			res := Judge(c, truth, r.Scale, r.Now())
			if err := r.Store.PutCanary(ctx, res); err != nil {
				return res, err
			}
			return res, nil
		}
		if err := r.Sleep(ctx, min(poll, deadline.Sub(r.Now()))); err != nil {
			return Result{}, err
		}
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
