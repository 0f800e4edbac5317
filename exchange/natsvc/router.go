package natsvc

import (
	"context"
	"errors"
	"iter"
	"time"

	json "github.com/go-json-experiment/json/v1"
	"github.com/nats-io/nats.go"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// router is the Service as the House's Router and Notifier: requests to
// servers and events to clients, over NATS.
type router Service

var (
	_ exchange.Router   = (*router)(nil)
	_ exchange.Notifier = (*router)(nil)
)

// Ask sends the offer to the servers, cheapest first, a few at a time
// (fanOut), and yields the answers as they arrive, within the negotiation
// time: the next few are asked once every server asked so far has
// refused, or when none has accepted within a hedge of the negotiation
// time (one slow to answer holds no offer up). With honest asks the
// cheapest server takes the offer, and an offer costs a negotiation or
// two, not one with each of RouteTo servers, each an accept claimed and
// cancelled (issue 42: 8 deliveries, 7.98 accepts and 6.98 cancels an
// offer). Should the House stop at an accept, the answers still to come
// are read off in the background and every later accept is cancelled.
func (r *router) Ask(ctx context.Context, offer protocol.ServerOffer, servers []string) iter.Seq[exchange.Answer] {
	return r.ask(ctx, protocol.DeliverOffer, offer, servers, max(1, r.serve.FanOut))
}

// Quote sends the quote to every server at once; an accept claims
// nothing, so none is cancelled.
func (r *router) Quote(ctx context.Context, offer protocol.ServerOffer, servers []string) iter.Seq[exchange.Answer] {
	return r.ask(ctx, protocol.DeliverQuote, offer, servers, len(servers))
}

// ask delivers offer as verb to the servers, wave servers at a time in
// their order (Ask), and yields the answers.
func (r *router) ask(ctx context.Context, verb string, offer protocol.ServerOffer, servers []string, wave int) iter.Seq[exchange.Answer] {
	quote := verb == protocol.DeliverQuote
	return func(yield func(exchange.Answer) bool) {
		body, _ := protocol.Marshal(offer)
		ctx, cancel := context.WithTimeout(ctx, r.cfg.Negotiation)
		answers := make(chan exchange.Answer, len(servers))
		sent, answered := 0, 0
		width := wave         // how many are asked at once: wave, and wave more at each hedge
		send := func(n int) { // ask n more
			n = max(n, 0)
			for _, srv := range servers[sent:min(sent+n, len(servers))] {
				go func() { answers <- r.offerTo(ctx, verb, srv, body) }()
				sent++
			}
		}
		send(wave)
		hedge := time.NewTimer(r.cfg.Negotiation / hedges) //wallclock: a negotiation's pacing, in real time
		defer hedge.Stop()
		for answered < sent {
			var a exchange.Answer
			select {
			case a = <-answers:
			case <-hedge.C:
				width += wave // none accepted in time: ask the next few beside the slow
				send(wave)
				hedge.Reset(r.cfg.Negotiation / hedges)
				continue
			}
			answered++
			if !yield(a) {
				left := sent - answered
				go func() { // cancel the accepts that arrive after the winner
					defer cancel()
					for range left {
						if late := <-answers; late.Err == nil && late.Decision.Accept && !quote {
							r.Cancel(late.Server, offer.Offer)
						}
					}
				}()
				return
			}
			// Not taken (a refusal, a counter-offer, an error): the next, so
			// that width are always being asked.
			send(width - (sent - answered))
		}
		cancel()
	}
}

// hedges is how many times within the negotiation time the next servers
// are asked beside those that have not answered yet.
const hedges = 8

// offerTo delivers body as verb to server srv and returns its answer.
func (r *router) offerTo(ctx context.Context, verb, srv string, body []byte) exchange.Answer {
	a := exchange.Answer{Server: srv}
	msg, err := r.nc.RequestWithContext(ctx, protocol.DeliverSubject(srv, verb), body)
	if err == nil {
		if err = natswire.DecodeError(msg); err == nil {
			err = json.Unmarshal(msg.Data, &a.Decision)
			a.Signed = &contract.Signed{Body: protocol.AcceptSigned(body, msg.Data), Sig: msg.Header.Get(protocol.SigHeader)}
		}
	}
	a.Err = err
	return a
}

// Start sends the start request after the House has answered the offer,
// and tells done what the server said.
func (r *router) Start(ctx context.Context, start protocol.Start, done func(protocol.Started, error)) {
	r.requests.Add(1)
	go func() {
		defer r.requests.Done()
		var st protocol.Started
		if j := start.Contract.Terms.Job; j != nil && (j.Command != "" || j.Image != "") { // a program's or an image's output
			(*Service)(r).ensureOutput(context.WithoutCancel(ctx), start.Contract.Server)
		}
		msg, err := r.startAsking(context.WithoutCancel(ctx), start)
		if err == nil {
			err = json.Unmarshal(msg, &st)
		}
		if err == nil && st.Output != (contract.OutputCaps{}) {
			// It says it will send output: its stream, if it has none yet
			// (a server that said it runs no program has none).
			(*Service)(r).ensureOutput(context.WithoutCancel(ctx), start.Contract.Server)
		}
		done(st, err)
	}()
}

// startAsking asks a server to start a contract, and asks again while it
// does not answer (a loaded machine, a request lost), until the
// contract's start deadline: a start is idempotent on the server, and its
// answer carries what the contract records of the job (its meter, its
// output's caps, its image), which a reading alone does not (under load,
// TestOutputForeignIDs once lost its caps to a start that timed out).
func (r *router) startAsking(ctx context.Context, start protocol.Start) ([]byte, error) {
	wait := 250 * time.Millisecond
	for {
		msg, err := r.request(ctx, start.Contract.Server, protocol.DeliverStart, start)
		if err == nil || !noAnswer(err) || !time.Now().Add(wait).Before(start.Contract.StartDeadline) { //wallclock: a NATS request's retries, in real time
			return msg, err
		}
		r.house.Config().Logger.Info("server did not answer the start; asking again", "contract", start.Contract.ID, "server", start.Contract.Server, "in", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait): //wallclock: as above
		}
		wait = min(2*wait, 4*time.Second)
	}
}

// noAnswer says whether a request's error is the want of an answer (none
// in time, nobody listening), not the server's word.
func noAnswer(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders)
}

// Cancel publishes the cancel of an accept not taken.
func (r *router) Cancel(server, offerID string) {
	body, _ := protocol.Marshal(protocol.Cancel{Offer: offerID})
	_ = r.nc.Publish(protocol.DeliverSubject(server, protocol.DeliverCancel), body)
}

// Control asks the server to stop a job: in the caller's goroutine when
// done waits for the answer, in the background when nobody does.
func (r *router) Control(ctx context.Context, c contract.Contract, action contract.Reason, done func(error)) {
	req := protocol.Control{Contract: c.ID, Action: action}
	if done != nil {
		_, err := r.request(ctx, c.Server, protocol.DeliverControl, req)
		done(err)
		return
	}
	r.requests.Add(1)
	go func() {
		defer r.requests.Done()
		_, _ = r.request(context.WithoutCancel(ctx), c.Server, protocol.DeliverControl, req)
	}()
}

// request sends v to server's delivery subject verb and returns the
// answer's body, waiting at most the negotiation time.
func (r *router) request(ctx context.Context, server, verb string, v any) ([]byte, error) {
	body, _ := protocol.Marshal(v)
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Negotiation)
	defer cancel()
	msg, err := r.nc.RequestWithContext(ctx, protocol.DeliverSubject(server, verb), body)
	if err == nil {
		err = natswire.DecodeError(msg)
	}
	if err != nil {
		return nil, err
	}
	return msg.Data, nil
}

// Notify publishes an event to the client's delivery subject: of the
// contract, what the event changed.
func (r *router) Notify(client string, ev exchange.Event) {
	body, err := protocol.MarshalEvent(ev.Wire())
	if err != nil {
		r.house.Config().Logger.Error("encode event", "err", err)
		return
	}
	_ = r.nc.Publish(protocol.DeliverSubject(client, protocol.DeliverEvent), body)
	// A contract that ended may have been the last to need its files.
	(*Service)(r).dropFiles(ev)
}
