package agent

import (
	"context"
	"fmt"
	"time"

	json "github.com/go-json-experiment/json/v1"
	"github.com/nats-io/nats.go"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// A final reading is the server's until the exchange says its store has
// it (protocol.VerbReceipts): the usage stream's acknowledgement is not
// enough, for the stream can lose what it acknowledged (a power loss, a
// nats-server that drops readings as it shuts down) and the exchange may
// refuse a reading for the server's rate. The exchange tells the agent of
// the final readings it stores (onReceipts); the agent asks about those it
// heard nothing of within receiptWait, sending them again with the
// question (askReceipts), and lists their contracts in its heartbeats as
// settling meanwhile, so that no sweep takes their silence for a lost
// server's. With an outbox, a held reading outlives the agent.

// What the agent knows of the exchange's receipts (Agent.receipts): until
// the hello's reply says, a final reading the stream acknowledged is held
// as though receipts will come, for an outbox's resends go out before the
// hello.
const (
	receiptsUnknown int32 = iota
	receiptsGiven
	receiptsNone
)

// adoptReceipts takes the hello reply's word on receipts. An exchange
// older than them gives none: the final readings held only for want of
// one are done with, as they were before receipts.
func (a *Agent) adoptReceipts(given bool) {
	if given {
		a.receipts.Store(receiptsGiven)
		return
	}
	a.receipts.Store(receiptsNone)
	for _, rd := range a.held.acknowledged() {
		if _, ok := a.held.done(rd.Contract, rd.Seq); ok && a.outbox != nil {
			if err := a.outbox.Done(rd.Contract, rd.Seq); err != nil {
				a.log.Warn("outbox", "err", err)
			}
		}
	}
}

// receiptWait is how long after a final reading is made the agent first
// asks about it: the usage stream brings it to the exchange, which tells
// the agent, within milliseconds when all is well.
func (a *Agent) receiptWait() time.Duration { return max(time.Second, 2*a.node.ReadingEvery()) }

// subscribeReceipts listens for the exchange's word that final readings
// are stored.
func (a *Agent) subscribeReceipts() (*nats.Subscription, error) {
	sub, err := a.nc.Subscribe(protocol.DeliverSubject(a.id, protocol.DeliverReceipts), a.onReceipts)
	if err != nil {
		return nil, fmt.Errorf("server %s: subscribe to receipts: %w", a.id, err)
	}
	return sub, nil
}

func (a *Agent) onReceipts(m *nats.Msg) {
	var rs protocol.Receipts
	if err := decode(m, &rs); err != nil {
		a.log.Warn("receipts", "err", err)
		return
	}
	a.receipted(rs.Receipts)
}

// receipted forgets the held readings the receipts settle: the outbox
// forgets them too. A receipt that says to ask again puts the next
// question off.
func (a *Agent) receipted(rcs []protocol.Receipt) {
	now := time.Now() //wallclock: pacing: when to ask again, in real time
	for _, rc := range rcs {
		if !rc.Done() {
			var wait time.Duration
			if rc.Error != nil {
				wait = time.Duration(rc.Error.RetryAfterMS) * time.Millisecond
			}
			a.held.again(rc.Contract, rc.Seq, now, wait, a.receiptWait())
			continue
		}
		rd, ok := a.held.done(rc.Contract, rc.Seq)
		if !ok {
			continue // not held: told twice, or about a reading no longer held
		}
		if a.outbox != nil {
			if err := a.outbox.Done(rc.Contract, rc.Seq); err != nil {
				a.log.Warn("outbox", "err", err)
			}
		}
		switch {
		case rc.Status == protocol.ReceiptKept:
			a.log.Debug("reading stored by the exchange", "contract", rc.Contract, "seq", rc.Seq, "final", rd.Final)
		case rc.Status == protocol.ReceiptEnded && rd.Final:
			a.log.Warn("the exchange ended the contract before its final reading counted",
				"contract", rc.Contract, "seq", rc.Seq, "stored_seq", rc.Stored, "state", rc.State, "reason", rc.Reason)
		case rc.Status == protocol.ReceiptEnded:
		default:
			a.log.Error("the exchange refused a reading", "contract", rc.Contract, "seq", rc.Seq, "final", rd.Final, "err", rc.Error)
		}
	}
}

// confirm asks about held readings whose time has come, every reading
// interval, until ctx ends.
func (a *Agent) confirm(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(a.node.ReadingEvery(), time.Second)): //wallclock: pacing: wakes the loop
		}
		if a.receipts.Load() == receiptsGiven {
			a.askReceipts(ctx)
		}
	}
}

// askReceipts sends the exchange the held readings whose time to be asked
// about has come, as few requests as fit them, and takes the receipts
// it answers with. A question that goes unanswered is asked again later,
// each time later.
func (a *Agent) askReceipts(ctx context.Context) {
	for {
		now := time.Now() //wallclock: pacing: when to ask, in real time
		rds := a.held.due(now, protocol.MaxReceipts, a.receiptWait())
		if len(rds) == 0 {
			return
		}
		a.log.Info("asking the exchange about final readings it sent no receipt for", "readings", len(rds))
		failed := false
		a.pack(rds, func(group []contract.Reading, data []byte) {
			if !failed {
				if err := a.ask(ctx, data); err != nil {
					failed = true
					if ctx.Err() == nil {
						a.log.Warn("asking the exchange about final readings; asking again later", "readings", len(rds), "err", err)
					}
				}
			}
			if failed {
				for _, rd := range group {
					a.held.again(rd.Contract, rd.Seq, now, 0, a.receiptWait())
				}
			}
		})
		if failed {
			return
		}
	}
}

// ask sends one receipts request and takes its answer.
func (a *Agent) ask(ctx context.Context, data []byte) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	msg, err := a.nc.RequestWithContext(rctx, protocol.ServerSubject(a.id, protocol.VerbReceipts), data)
	if err == nil {
		err = natswire.DecodeError(msg)
	}
	if err != nil {
		return err
	}
	var rs protocol.Receipts
	if err := json.Unmarshal(msg.Data, &rs); err != nil {
		return fmt.Errorf("receipts: %w", err)
	}
	a.receipted(rs.Receipts)
	return nil
}

// awaitReceipts waits, at a shutdown, until the exchange has every final
// reading or ctx ends. What is still held then stays in the outbox for
// the next run, or is lost without one.
func (a *Agent) awaitReceipts(ctx context.Context) {
	for a.receipts.Load() == receiptsGiven && a.held.finals() > 0 {
		select {
		case <-ctx.Done():
			if a.outbox != nil {
				a.log.Warn("final readings without the exchange's receipt; the outbox keeps them for the next run", "contracts", a.held.ids())
			} else {
				a.log.Error("final readings without the exchange's receipt lost at shutdown (no outbox)", "contracts", a.held.ids())
			}
			return
		case <-time.After(tickEvery): //wallclock: pacing: how long a shutdown waits, in real time
		}
	}
}
