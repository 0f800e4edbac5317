package bidder

import (
	"context"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// WatchPoll is how often Watch reads the contract record while it waits,
// in case an event was lost (events are notifications; the record is the
// truth).
const WatchPoll = 2 * time.Second

// Update is one event of a watched contract and the contract as it
// stands after it: what the event changed merged into all that came
// before (protocol.ContractView.Apply). Encoded, it is the event with the
// whole contract.
type Update struct {
	Type     protocol.EventType    `json:"type"`
	Contract protocol.ContractView `json:"contract"`
	// Due is the running charge of a reading event.
	Due decimal.Decimal `json:"due,omitzero"`
	// Warning is a spend warning's.
	Warning string    `json:"warning,omitempty"`
	At      time.Time `json:"at"`
}

// Watch delivers the events of one contract, first the contract as it
// stands now, then each event as it comes, each with the whole contract
// (events carry only what changed: Watch merges them into the contract
// it read), and closes the channel after the settled or voided event, or
// when ctx ends. A watcher that arrives after the settlement gets the
// settled (or voided) event at once. It fails with not_found if the
// contract is not the client's.
func (c *Client) Watch(ctx context.Context, id string) (<-chan Update, error) {
	wctx, cancel := context.WithCancel(ctx)
	events, err := c.Events(wctx, 64) // subscribe before reading, so nothing falls in between
	if err != nil {
		cancel()
		return nil, err
	}
	now, err := c.Contract(ctx, id)
	if err != nil {
		cancel()
		return nil, err
	}
	out := make(chan Update, 1)
	go func() {
		defer close(out)
		defer cancel()
		w := watcher{out: out, ctx: wctx, view: now}
		if !w.send(Update{Type: eventOf(now.State), Contract: now, At: time.Now().UTC()}) {
			return
		}
		poll := time.NewTicker(WatchPoll)
		defer poll.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case ev, ok := <-events:
				if !ok {
					return
				}
				if ev.Contract == nil || ev.Contract.ID != id {
					continue
				}
				w.view.Apply(*ev.Contract)
				if !w.send(Update{Type: ev.Type, Contract: w.view, Due: ev.Due, Warning: ev.Warning, At: ev.At}) {
					return
				}
			case <-poll.C:
				got, err := c.Contract(wctx, id)
				if err == nil && got.State.Ended() {
					w.view = got // the record is the truth
					if !w.send(Update{Type: eventOf(got.State), Contract: got, At: time.Now().UTC()}) {
						return
					}
				}
			}
		}
	}()
	return out, nil
}

// watcher forwards one contract's events in order of its life: an event
// older than one already sent (a started event that arrives after the
// first reading, or the record read at the start) is dropped.
type watcher struct {
	out  chan<- Update
	ctx  context.Context
	view protocol.ContractView // every event so far merged in
	last int
}

// send forwards ev unless it is stale and reports whether to go on.
func (w *watcher) send(ev Update) bool {
	if ev.Type == protocol.EventSpendWarning {
		// A warning about the client's caps, not a step of the contract's
		// life: it goes through whatever came before.
		select {
		case w.out <- ev:
			return true
		case <-w.ctx.Done():
			return false
		}
	}
	r := rank(ev.Type)
	if r < w.last || (r == w.last && r != rank(protocol.EventReading)) {
		return true
	}
	w.last = r
	select {
	case w.out <- ev:
	case <-w.ctx.Done():
		return false
	}
	return !ev.Contract.State.Ended() && ev.Type != protocol.EventSettled && ev.Type != protocol.EventVoided
}

func rank(t protocol.EventType) int {
	switch t {
	case protocol.EventAccepted:
		return 1
	case protocol.EventStarted:
		return 2
	case protocol.EventReading:
		return 3
	case protocol.EventSettled, protocol.EventVoided:
		return 4
	}
	return 0
}

// eventOf names the event that brought a contract to its state.
func eventOf(s contract.State) protocol.EventType {
	switch s {
	case contract.StateRunning:
		return protocol.EventStarted
	case contract.StateSettled:
		return protocol.EventSettled
	case contract.StateVoided:
		return protocol.EventVoided
	}
	return protocol.EventAccepted
}
