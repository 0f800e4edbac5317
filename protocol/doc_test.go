package protocol_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// docPath names the wire protocol reference whose examples these tests
// pin: its index, docs/protocol.md, and its pages, docs/protocol/*.md
// (docPages), read as one text, so that every check holds of the whole
// reference wherever a page keeps each part.
const docPath = "docs/protocol.md and docs/protocol/*.md"

// docPages are the reference's files: the index, then its pages.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../docs/protocol/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages under docs/protocol: %v", err)
	}
	sort.Strings(pages)
	return append([]string{"../docs/protocol.md"}, pages...)
}

var writeExamples = flag.String("examples", "",
	"write each docs/protocol.md example to DIR/NAME.json, to paste into the doc after a protocol change")

// The examples tell one story: on 2026-11-21 alice rents two H100s of gpu1,
// suspends the job after 45 minutes and resumes it; one of her offers is
// countered, another is voided.
var noon = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// at is noon plus offset, a Go duration ("45m10.529s").
func at(t *testing.T, offset string) time.Time {
	t.Helper()
	d, err := time.ParseDuration(offset)
	if err != nil {
		t.Fatal(err)
	}
	return noon.Add(d)
}

// contractID is how the exchange names the contract of an offer (see
// exchange/offer.go): retrying a request id finds the same contract.
func contractID(client, requestID string) string {
	h := sha256.Sum256([]byte(client + "\x00" + requestID))
	return "c-" + hex.EncodeToString(h[:10])
}

// view is the record c as its parties see it.
func view(c contract.Contract) *protocol.ContractView {
	v := protocol.View(c)
	return &v
}

type example struct {
	name  string
	value any
}

// examples builds every message that docs/protocol.md shows, in the order
// the doc shows them.
func examples(t *testing.T) []example {
	t.Helper()
	const scale = 2 // CRED
	const filesDigest = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	id := contractID("alice", "train-81861")
	if id != "c-3f9a363f20c7660bebf0" {
		t.Fatalf("contract id %s", id)
	}
	resumedID := contractID("alice", "train-81861-resume")
	voidedID := contractID("alice", "train-81870")

	// What alice offers: 2 H100s for up to 2 hours, paying per GPU-second
	// nothing below 0.5 GPUs busy on average, rising to 0.004 CRED at 2.
	terms := contract.Terms{
		Client:     "alice",
		Currency:   "CRED",
		GPUs:       2,
		Class:      contract.Class{Model: "H100", MinMemoryMiB: 80000},
		TimeLimit:  2 * time.Hour,
		Prepayment: dectest.D("40.00"),
		P:          contract.Ramp(dectest.D("0.5"), dectest.D("2"), dectest.D("0.004")),
		Job: &contract.JobSpec{
			Command: "/opt/jobs/train.sh",
			Args:    []string{"--config", "resnet50.yaml", "--ckpt-dir", "/scratch/alice/ckpt"},
			Env:     map[string]string{"WANDB_MODE": "offline"},
		},
	}
	if err := contract.Validate(terms, func(string) (int32, bool) { return scale, true }); err != nil {
		t.Fatal(err)
	}
	onGPU1 := terms
	onGPU1.Server = "gpu1"
	// The exchange's id of a negotiation: its instance's token and the
	// count of its negotiations (exchange/offer.go), naming neither
	// the contract nor the client. It keys the escrow (escrow/<offer>).
	const instance = "o-7d1c4e9a0b2f3865c1d4e7a9-"
	offerID, resumedOfferID := instance+"12", instance+"418"

	accepted := contract.Contract{
		ID: id, Client: "alice", Server: "gpu1", Terms: onGPU1, State: contract.StateAccepted,
		AcceptedAt: at(t, "31ms"), StartDeadline: at(t, "15.031s"),
	}
	started := protocol.Started{Contract: id, GPUs: []int{2, 3}, At: at(t, "36ms"), Meter: contract.MeterNVML,
		Output: contract.OutputCaps{Log: 10 << 20, Results: 64 << 20}, Model: "H100"}
	running := accepted
	running.State, running.GPUs, running.StartedAt, running.LastSeen = contract.StateRunning, started.GPUs, started.At, at(t, "37ms")
	running.Meter, running.Model = started.Meter, started.Model

	reading := contract.Reading{
		Contract: id, Seq: 600, U: dectest.D("1140.5"), T: contract.Duration(10 * time.Minute), S: dectest.D("2"),
		EnergyJ: dectest.D("781440"), At: at(t, "10m0.036s"),
	}
	withReading := running
	withReading.Reading, withReading.LastSeen = &reading, at(t, "10m0.039s")
	due, err := contract.Due(terms, reading.Usage(), scale)
	if err != nil {
		t.Fatal(err)
	}

	lastBeforeSuspend := contract.Reading{
		Contract: id, Seq: 2709, U: dectest.D("5146.3"), T: contract.Duration(45*time.Minute + 9*time.Second), S: dectest.D("2"),
		EnergyJ: dectest.D("3522870"), At: at(t, "45m9.036s"),
	}
	beingSuspended := running
	beingSuspended.Reading, beingSuspended.LastSeen = &lastBeforeSuspend, at(t, "45m9.040s")
	// The suspend as the exchange heard it: it believes the server for the
	// stop grace (15 s) more.
	suspend := contract.Stop{Reason: contract.ReasonSuspended, At: at(t, "45m9.502s"), By: at(t, "45m24.502s")}
	beingSuspended.Stop = &suspend

	final := contract.Reading{
		Contract: id, Seq: 2710, U: dectest.D("5147.9"), T: contract.Duration(45*time.Minute + 10476*time.Millisecond), S: dectest.D("2"),
		EnergyJ: dectest.D("3524310"), At: at(t, "45m10.512s"), Final: true, Reason: contract.ReasonSuspended,
	}
	st, err := contract.Charge(terms, final.Usage(), scale)
	if err != nil {
		t.Fatal(err)
	}
	settled := running
	settled.State, settled.Reason, settled.Stop = contract.StateSettled, contract.ReasonSuspended, &suspend
	settled.Reading, settled.LastSeen, settled.SettledAt = &final, at(t, "45m10.529s"), at(t, "45m10.529s")
	settled.Charge, settled.Refund = st.Charge, st.Refund

	resumed := contract.Contract{
		ID: resumedID, Client: "alice", Server: "gpu1", Terms: onGPU1, State: contract.StateRunning,
		Resumes: id, GPUs: []int{2, 3}, Meter: contract.MeterNVML,
		AcceptedAt: at(t, "50m0.027s"), StartDeadline: at(t, "50m15.027s"),
		StartedAt: at(t, "50m0.033s"), LastSeen: at(t, "54m59.041s"),
		Reading: &contract.Reading{
			Contract: resumedID, Seq: 299, U: dectest.D("571.2"), T: contract.Duration(4*time.Minute + 59*time.Second), S: dectest.D("2"),
			EnergyJ: dectest.D("389220"), At: at(t, "54m59.033s"),
		},
	}

	voidedTerms := terms
	voidedTerms.Server = "gpu2"
	voided := contract.Contract{
		ID: voidedID, Client: "alice", Server: "gpu2", Terms: voidedTerms, State: contract.StateVoided,
		Reason:     contract.ReasonNotStarted,
		AcceptedAt: at(t, "1h10m0.027s"), StartDeadline: at(t, "1h10m15.027s"), SettledAt: at(t, "1h10m15.9s"),
		Charge: decimal.Zero, Refund: terms.Prepayment,
	}

	// The countered offer: gpu1 wants up to 0.006, gpu2 has no room.
	counterTerms := onGPU1
	counterTerms.P = contract.Ramp(dectest.D("0.5"), dectest.D("2"), dectest.D("0.006"))
	counter := contract.Counter{
		ID: "VbP3ZkQ8rT1nXw6YcJ2m4d", Server: "gpu1", Terms: counterTerms, ValidUntil: at(t, "20m10.004s"),
		Note: "reserve price: 0.006 per GPU-second at full use",
	}

	// alice's wallet: a grant, the escrow and refund of the suspended
	// contract, the escrow of the resumed one.
	wallet := currency.WalletID("CRED", "alice")
	grant := dectest.D("500.00")
	afterEscrow := grant.Sub(terms.Prepayment)
	afterRefund := afterEscrow.Add(st.Refund)
	afterResume := afterRefund.Sub(terms.Prepayment)
	hold := func(c string) currency.HoldID { return currency.HoldID(c) }
	escrow := func(c string) currency.AccountID { return currency.EscrowID(hold(c)) }
	entries := []currency.Entry{
		{Account: wallet, Seq: 1, Movement: "t/grant/alice/2026-11", Key: "grant/alice/2026-11",
			Counterparty: currency.IssuanceID("CRED"), Amount: grant, Balance: grant,
			Memo: "November allocation", At: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{Account: wallet, Seq: 2, Movement: "h/" + id + "/reserve", Key: "escrow/" + offerID,
			Counterparty: escrow(id), Amount: terms.Prepayment.Neg(), Balance: afterEscrow, Hold: hold(id),
			Memo: "prepayment of contract " + id, At: accepted.AcceptedAt},
		{Account: wallet, Seq: 3, Movement: "h/" + id + "/resolve/1", Key: "settle/" + id,
			Counterparty: escrow(id), Amount: st.Refund, Balance: afterRefund, Hold: hold(id),
			Memo: "contract " + id + " suspended", At: settled.SettledAt},
		{Account: wallet, Seq: 4, Movement: "h/" + resumedID + "/reserve", Key: "escrow/" + resumedOfferID,
			Counterparty: escrow(resumedID), Amount: terms.Prepayment.Neg(), Balance: afterResume, Hold: hold(resumedID),
			Memo: "prepayment of contract " + resumedID, At: resumed.AcceptedAt},
	}

	// At 13:00 every H100 is taken: alice's offer waits in the book up to
	// six hours, behind one better-priced offer, and is matched at 13:42.
	// Its curve has a floor of 0.003, which ranks it in the book; its
	// prepayment over its GPU-seconds, 40/14400, ranks it lower still.
	waitID := contractID("alice", "train-81880")
	waitTerms := terms
	waitTerms.Job = nil
	waitTerms.P = contract.Curve{{X: dectest.D("0"), Y: dectest.D("0.003")}, {X: dectest.D("2"), Y: dectest.D("0.004")}}
	queued := contract.Waiting{ID: waitID, Client: "alice", RequestID: "train-81880", Terms: waitTerms,
		Price: waitTerms.SurePrice().Decimal(scale + protocol.PricePlaces), QueuedAt: at(t, "1h0m0.004s"), Until: at(t, "7h0m0.004s"), Ahead: 1}
	if !queued.Price.Equal(dectest.D("0.00277778")) {
		t.Fatalf("sure price %s", queued.Price)
	}
	cancelled := queued
	cancelled.Ahead, cancelled.Left = 0, contract.LeftCancelled
	expired := queued
	expired.Ahead, expired.Left = 0, contract.LeftExpired
	waitCounter := counter
	waitCounter.ID, waitCounter.Terms.Job, waitCounter.ValidUntil = "Qm7hT2cV9pL4xZ8aR1sN3e", nil, at(t, "1h42m15.2s")

	gpus := make([]contract.GPU, 4)
	for i := range gpus {
		gpus[i] = contract.GPU{Index: i, Model: "H100", MemoryMiB: 81559}
	}
	helloScale := int32(2)
	runs := protocol.Runs{Runner: protocol.RunnerProcess, Meter: contract.MeterNVML, Programs: []string{"/opt/jobs/train.sh"}}
	// gpu1's ask: 0.004 a GPU-second at full use, nothing when idle, as
	// its reserve's curve; all four free at the hello, two at the
	// heartbeat, whose contract's time limit frees them two hours after
	// its start.
	askCurve := contract.Ramp(dectest.D("0.5"), dectest.D("2"), dectest.D("0.004"))
	helloAsk := protocol.Ask{Classes: []protocol.ClassAsk{{Model: "H100", MemoryMiB: 81559, GPUs: 4, Free: 4, P: askCurve}},
		MaxTimeLimit: contract.Duration(24 * time.Hour)}
	beatAsk := helloAsk
	beatAsk.Classes = []protocol.ClassAsk{{Model: "H100", MemoryMiB: 81559, GPUs: 4, Free: 2,
		FreeAt: []protocol.FreeAt{{At: at(t, "2h0m0.036s"), GPUs: 2}}, P: askCurve}}
	// A readings message: two contracts' readings of one interval, each
	// the reading's bytes as signed and its signature.
	compact := func(r contract.Reading) []byte {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	other := contract.Reading{Contract: resumedID, Seq: 12, U: dectest.D("22.9"), T: contract.Duration(12 * time.Second), S: dectest.D("2"),
		EnergyJ: dectest.D("15620"), At: reading.At}
	readings := protocol.Readings{Readings: []protocol.SignedReading{
		{Reading: compact(reading), Sig: "f1mQ0c5XyqS8a2cG3nqK3n6hC0lW9y4bH5m4H1v4uQx0qzvUuQ0oYt9cB2gS4bE3n1g7m8oA2pT6yV5dR0kLCg"},
		{Reading: compact(other), Sig: "Zb3v5oP0tW8nH2kC6q9uY1aE4rX7mJ2dL5sF8gT0cV3bN6xQ9wR2eK5hM8pA1jD4uG7yS0iO3lZ6fB9nT2cWw"},
	}}

	return []example{
		// Errors.
		{"error", protocol.ErrorReply{Error: &bourse.Error{Code: bourse.EInsufficientFunds, Field: "terms.prepayment",
			Message: "prepayment 40.00 exceeds the available 12.50 CRED"}}},

		// Client requests.
		{"offer.request", protocol.OfferRequest{RequestID: "train-81861", Terms: terms}},
		{"offer.reply.contract", protocol.OfferReply{Contract: view(accepted)}},
		{"offer.reply.counters", protocol.OfferReply{
			Counters:   []contract.Counter{counter},
			Rejections: []protocol.Rejection{{Server: "gpu2", Reason: "not enough free GPUs of the class"}},
		}},
		{"offer.request.counter", protocol.OfferRequest{RequestID: "train-81863", Terms: counterTerms, Counter: counter.ID}},
		{"offer.error.capacity_gone", protocol.ErrorReply{Error: &bourse.Error{Code: bourse.ECapacityGone, Field: "counter",
			Message: "the counter-offer's GPUs were taken meanwhile"}}},
		{"offer.request.resume", protocol.OfferRequest{RequestID: "train-81861-resume", Terms: onGPU1, Resumes: id}},
		{"control.request", protocol.ControlRequest{RequestID: "suspend-" + id, Contract: id}},
		{"control.reply", *view(beingSuspended)},
		{"contract.request", protocol.ContractRequest{Contract: id}},
		{"contract.reply", *view(settled)},
		{"contracts.request", protocol.ContractsRequest{Limit: 1}},
		{"contracts.reply", protocol.ContractsReply{Contracts: protocol.Views([]contract.Contract{resumed})}},
		{"balance.request", protocol.BalanceRequest{Currency: "CRED"}},
		{"balance.reply", protocol.BalanceReply{
			Balance: currency.Balance{Account: wallet, Currency: "CRED", Available: afterResume, Held: terms.Prepayment},
			Scale:   scale,
		}},
		{"statement.request", protocol.StatementRequest{Currency: "CRED", Limit: 50}},
		{"statement.reply", protocol.StatementReply{Entries: entries}},
		{"logs.request", protocol.OutputRequest{Contract: id}},
		{"logs.reply", protocol.OutputReply{Chunks: []protocol.OutputChunk{
			{Seq: 4107, Stream: protocol.StreamStdout, Offset: 0, Data: []byte("epoch 1/90 loss 6.91\n")},
			{Seq: 4108, Stream: protocol.StreamStderr, Offset: 0, Data: []byte("warning: cudnn benchmark off\n")},
			{Seq: 4522, Stream: protocol.StreamStdout, Offset: 21, Data: []byte("epoch 2/90 loss 5.87\n")},
		}, Next: 4522, State: contract.StateRunning}},
		{"logs.request.next", protocol.OutputRequest{Contract: id, After: 4522}},
		{"logs.reply.done", protocol.OutputReply{Chunks: []protocol.OutputChunk{}, Next: 98211, Done: true,
			End: &protocol.OutputEnd{Stdout: 1890, Stderr: 29, Cap: 10 << 20}, State: contract.StateSettled}},
		{"results.reply", protocol.OutputReply{Chunks: []protocol.OutputChunk{
			{Seq: 98212, Stream: protocol.StreamResults, Offset: 0, Data: []byte("ckpt/\x00\x00\x00")},
		}, Next: 98212, State: contract.StateSettled}},
		{"output.end.log", protocol.OutputEnd{Stdout: 1890, Stderr: 29, Cap: 10 << 20}},
		{"output.end.results", protocol.OutputEnd{Results: 20480, Omitted: []string{"ckpt/optimizer.pt: 3221225472 bytes, over the results cap"}}},
		{"offer.request.wait", protocol.OfferRequest{RequestID: "train-81880", Terms: waitTerms, Wait: contract.Duration(6 * time.Hour)}},
		{"offer.reply.queued", protocol.OfferReply{
			Rejections: []protocol.Rejection{{Server: "gpu1", Reason: "no free GPU of the class"}, {Server: "gpu2", Reason: "no free GPU of the class"}},
			Queued:     &queued,
		}},
		{"waiting.request", protocol.WaitingRequest{Currency: "CRED"}},
		{"waiting.reply", protocol.WaitingReply{Offers: []contract.Waiting{queued}}},
		{"cancel.request", protocol.CancelRequest{Offer: waitID}},
		{"cancel.reply", cancelled},
		{"balance.reply.waiting", protocol.BalanceReply{
			Balance: currency.Balance{Account: wallet, Currency: "CRED", Available: afterResume, Held: terms.Prepayment},
			Scale:   scale, Waiting: &protocol.WaitingSum{Offers: 1, Prepayments: terms.Prepayment},
		}},
		{"servers.request", protocol.ServersRequest{Currency: "CRED"}},
		{"servers.reply", protocol.ServersReply{Servers: []protocol.Server{
			func() protocol.Server {
				s := protocol.ServerOf("gpu1", protocol.Hello{Currency: "CRED", GPUs: gpus, Free: 2, Policy: "reserve", Runs: &runs, Ask: &beatAsk}, at(t, "10m0.5s"))
				// Its canaries: one a day, one voided; the worst
				// passed 1.25% over the truth.
				worst := dectest.D("0.0125")
				s.Record = &protocol.Record{Window: contract.Duration(time.Hour), Accepted: 12, Started: 11, NotStarted: 1,
					Canaries: &protocol.Canaries{Window: contract.Duration(7 * 24 * time.Hour), Run: 7, Passed: 6, Inconclusive: 1, Worst: &worst}}
				return s
			}(),
			protocol.ServerOf("gpu2", protocol.Hello{Currency: "CRED", GPUs: gpus[:2], Free: 0, Policy: "posted 0.004/GPU-s",
				Runs: &protocol.Runs{Runner: protocol.RunnerSynthetic, Meter: contract.MeterSynthetic}}, at(t, "10m0.9s")),
		}}},
		{"files.request", protocol.FilesRequest{Digest: filesDigest, Bytes: 20480}},
		{"files.reply", protocol.FilesReply{Bucket: protocol.FilesBucketOf("alice"), Object: filesDigest, MaxBytes: 1 << 30, Quota: 1 << 30,
			MaxAge: contract.Duration(24 * time.Hour)}},
		{"fetch.request", protocol.FetchRequest{Contract: id}},
		{"fetch.reply", protocol.FetchReply{Chunks: [][]byte{[]byte("train.py\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")}, Next: 57, Done: true}},
		{"quote.request", protocol.QuoteRequest{Terms: terms}},
		{"quote.reply", protocol.QuoteReply{Accepts: []string{"gpu1"},
			Rejections: []protocol.Rejection{{Server: "gpu2", Reason: "not enough free GPUs of the class"}}}},
		{"market", protocol.Market{Currency: "CRED", Scale: scale, At: at(t, "1h"), Window: contract.Duration(time.Hour),
			Every: contract.Duration(5 * time.Second), Models: []protocol.MarketModel{{
				Model: "H100", Settled: 12, Used: dectest.D("51600"), Charged: dectest.D("215.86"),
				Prices: &protocol.Prices{Low: dectest.D("0.0035"), Median: dectest.D("0.004"), High: dectest.D("0.006"), VWAP: dectest.D("0.00418333")},
				GPUs:   8, Free: 2,
				Waiting: protocol.Depth{Offers: 1, GPUs: 2, Best: dectest.D("0.001")},
				Last:    &protocol.Trade{Price: dectest.D("0.004"), At: at(t, "59m41s")},
				// gpu1's ask at one GPU used in full, a third of 0.004,
				// rounded up; an offer waiting at 0.001 flat.
				Book: &protocol.Book{Asks: []protocol.Level{{Price: dectest.D("0.00133334"), GPUs: 2, Orders: 1}},
					Bids: []protocol.Level{{Price: dectest.D("0.001"), GPUs: 2, Orders: 1}}, AskGPUs: 2, BidGPUs: 2,
					BestAsk: ptr(dectest.D("0.00133334")), BestBid: ptr(dectest.D("0.001")), Spread: ptr(dectest.D("0.00033334")), Mid: ptr(dectest.D("0.00116667"))},
			}}, Servers: []protocol.MarketServer{{ID: "gpu1", GPUs: 4, Free: 2}, {ID: "gpu2", GPUs: 4, Free: 0}}}},

		// Events.
		{"event.accepted", protocol.Event{Type: protocol.EventAccepted, Contract: protocol.Changed(protocol.EventAccepted, &accepted), At: accepted.AcceptedAt}},
		{"event.started", protocol.Event{Type: protocol.EventStarted, Contract: protocol.Changed(protocol.EventStarted, &running), At: running.LastSeen}},
		{"event.reading", protocol.Event{Type: protocol.EventReading, Contract: protocol.Changed(protocol.EventReading, &withReading), Due: due, At: withReading.LastSeen}},
		{"event.settled", protocol.Event{Type: protocol.EventSettled, Contract: protocol.Changed(protocol.EventSettled, &settled), At: settled.SettledAt}},
		{"event.voided", protocol.Event{Type: protocol.EventVoided, Contract: protocol.Changed(protocol.EventVoided, &voided), At: voided.SettledAt}},
		{"event.countered", protocol.Event{Type: protocol.EventCountered, Waiting: &queued, Counters: []contract.Counter{waitCounter}, At: at(t, "1h42m0.2s")}},
		{"event.left_book", protocol.Event{Type: protocol.EventLeftBook, Waiting: &expired, Message: "its wait ended unmatched", At: at(t, "7h0m0.5s")}},

		// Server requests.
		{"hello.request", protocol.Hello{Currency: "CRED", Scale: &helloScale, GPUs: gpus, Free: 4, Policy: "reserve", Runs: &runs, Ask: &helloAsk, At: at(t, "-2m")}},
		{"hello.reply", protocol.HelloReply{
			Heartbeat:       contract.Duration(time.Second),
			ChangeGap:       contract.Duration(100 * time.Millisecond),
			ReadingEvery:    contract.Duration(time.Second),
			ServerLostAfter: contract.Duration(10 * time.Second),
			Readings:        true,
			Receipts:        true,
		}},
		{"receipts", protocol.Receipts{Receipts: []protocol.Receipt{
			{Contract: id, Seq: 2710, Status: protocol.ReceiptKept, Stored: 2710},
			{Contract: "c-2b985bf265206b9630b9", Seq: 14, Status: protocol.ReceiptEnded, Stored: 12, State: contract.StateSettled, Reason: contract.ReasonServerLost},
		}}},
		{"heartbeat", protocol.Hello{Currency: "CRED", Scale: &helloScale, GPUs: gpus, Free: 2, Running: []string{id}, Policy: "reserve", Runs: &runs, Ask: &beatAsk,
			Heartbeat: contract.Duration(time.Second), At: at(t, "10m0.5s")}},
		{"started", started},
		{"started.reply", *view(running)},
		{"reading", reading},
		{"reading.final", final},
		{"readings", readings},

		// Deliveries to servers.
		{"deliver.offer", protocol.ServerOffer{Offer: offerID, Terms: terms}},
		{"deliver.pace", protocol.Pace{Heartbeat: contract.Duration(10 * time.Second)}},
		{"decision.accept", protocol.Decision{Accept: true, ClaimFor: contract.Duration(5 * time.Second)}},
		{"decision.counter", protocol.Decision{Counters: []contract.Counter{counter}, Reason: "below the reserve price"}},
		{"decision.reject", protocol.Decision{Reason: "the counter-offer's GPUs were taken meanwhile", Code: bourse.ECapacityGone}},
		{"deliver.start", protocol.Start{Offer: offerID, Contract: *view(accepted)}},
		{"deliver.cancel", protocol.Cancel{Offer: offerID}},
		{"deliver.control", protocol.Control{Contract: id, Action: contract.ReasonSuspended}},
		{"deliver.control.reply", struct{}{}},
		{"deliver.quote", protocol.ServerOffer{Offer: "quote-7d1c4e9a0b2f3865c1d4e7a9-11", Terms: terms}},
	}
}

// TestDocExamples checks that docs/protocol.md shows every example exactly
// as encoding/json writes it, that every ```json block of the doc is one
// of them, and that each survives a round trip.
func TestDocExamples(t *testing.T) {
	blocks := jsonBlocks(readDoc(t))
	shown := map[string]bool{}
	for _, ex := range examples(t) {
		b, err := json.MarshalIndent(ex.value, "", "  ")
		if err != nil {
			t.Fatalf("%s: %v", ex.name, err)
		}
		if *writeExamples != "" {
			if err := os.WriteFile(filepath.Join(*writeExamples, ex.name+".json"), append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		shown[string(b)] = true
		t.Run(ex.name, func(t *testing.T) {
			if !blocks[string(b)] {
				t.Errorf("%s lacks the %s example, which now reads:\n```json\n%s\n```", docPath, ex.name, b)
			}
			// Round trip: decode into a fresh value of the same type and
			// encode again.
			p := reflect.New(reflect.TypeOf(ex.value))
			if err := json.Unmarshal(b, p.Interface()); err != nil {
				t.Fatalf("decode: %v", err)
			}
			again, err := json.MarshalIndent(p.Elem().Interface(), "", "  ")
			if err != nil {
				t.Fatalf("encode again: %v", err)
			}
			if !bytes.Equal(again, b) {
				t.Errorf("round trip changed the message:\n%s\nbecame\n%s", b, again)
			}
		})
	}
	for blk := range blocks {
		if !shown[blk] {
			t.Errorf("%s has a json block that no example checks; add it to examples or use another fence:\n%s", docPath, blk)
		}
	}
}

// jsonBlocks returns the contents of the ```json fenced blocks of md.
func jsonBlocks(md string) map[string]bool {
	out := map[string]bool{}
	var cur []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```json":
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			out[strings.Join(cur, "\n")] = true
		case in:
			cur = append(cur, line)
		}
	}
	return out
}

// TestDocCommands checks the natscli commands of the walk-through: each
// body must pass the exchange's strict decoding as the message its subject
// carries, and each command must run as the party its subject names.
func TestDocCommands(t *testing.T) {
	// A server's hello and heartbeats carry its clock's time, which the
	// walk-through splices in from date(1): read it as such a time.
	doc := strings.ReplaceAll(readDoc(t), `'"$(date -u +%FT%T.%NZ)"'`, "2026-11-21T11:58:00.5Z")
	cmdRE := regexp.MustCompile(`nats\b([^\n']*?)\b(req|request|pub|publish|reply)\b[^\n']*?\s(bourse\.v1\.[^\s']+)\s+'(\{[^'\n]*\})'`)
	asRE := regexp.MustCompile(`--(?:context|user)[ =]([A-Za-z0-9_@-]+)`)
	bodies := map[string]func() any{
		"client.offer":     func() any { return new(protocol.OfferRequest) },
		"client.suspend":   func() any { return new(protocol.ControlRequest) },
		"client.kill":      func() any { return new(protocol.ControlRequest) },
		"client.contract":  func() any { return new(protocol.ContractRequest) },
		"client.contracts": func() any { return new(protocol.ContractsRequest) },
		"client.balance":   func() any { return new(protocol.BalanceRequest) },
		"client.statement": func() any { return new(protocol.StatementRequest) },
		"client.logs":      func() any { return new(protocol.OutputRequest) },
		"client.results":   func() any { return new(protocol.OutputRequest) },
		"client.quote":     func() any { return new(protocol.QuoteRequest) },
		"client.cancel":    func() any { return new(protocol.CancelRequest) },
		"client.waiting":   func() any { return new(protocol.WaitingRequest) },
		"client.servers":   func() any { return new(protocol.ServersRequest) },
		"server.hello":     func() any { return new(protocol.Hello) },
		"server.heartbeat": func() any { return new(protocol.Hello) },
		"server.started":   func() any { return new(protocol.Started) },
		"server.usage":     func() any { return new(contract.Reading) },
		"deliver.offer":    func() any { return new(protocol.Decision) },
		"deliver.start":    func() any { return new(protocol.Started) },
		"deliver.control":  func() any { return new(struct{}) },
	}
	seen := map[string]bool{}
	for _, m := range cmdRE.FindAllStringSubmatch(doc, -1) {
		line, subject, body := m[0], m[3], m[4]
		tok := strings.Split(subject, ".")
		if len(tok) < 5 {
			t.Errorf("%s: subject %s is too short", line, subject)
			continue
		}
		kind := tok[2] + "." + tok[4]
		newBody, ok := bodies[kind]
		if !ok {
			t.Errorf("%s: no message is sent on %s", line, subject)
			continue
		}
		seen[kind] = true
		if as := asRE.FindAllStringSubmatch(line, -1); len(as) > 0 && as[len(as)-1][1] != tok[3] {
			t.Errorf("%s: runs as %s but the subject names %s", line, as[len(as)-1][1], tok[3])
		}
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(newBody()); err != nil {
			t.Errorf("%s: body refused: %v", line, err)
		} else if dec.More() {
			t.Errorf("%s: data after the body", line)
		}
	}
	for _, kind := range []string{"client.offer", "client.quote", "client.cancel", "client.waiting", "client.suspend", "client.contract", "client.contracts",
		"client.balance", "client.statement", "client.logs", "client.results", "server.hello", "server.heartbeat", "server.usage", "deliver.offer"} {
		if !seen[kind] {
			t.Errorf("the walk-through shows no natscli command for %s", kind)
		}
	}
	// Replies shown as natscli prints them: compact.
	for _, ex := range examples(t) {
		if ex.name != "balance.reply" && ex.name != "error" {
			continue
		}
		b, err := json.Marshal(ex.value)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(doc, string(b)) {
			t.Errorf("%s lacks the natscli output of %s, which now reads:\n%s", docPath, ex.name, b)
		}
	}
}

// TestDocExampleIDs checks the identifiers the doc quotes in prose.
func TestDocExampleIDs(t *testing.T) {
	doc := readDoc(t)
	r := contract.Reading{
		Contract: contractID("alice", "train-81861"), Seq: 600, U: dectest.D("1140.5"), T: contract.Duration(10 * time.Minute),
		S: dectest.D("2"), EnergyJ: dectest.D("781440"), At: at(t, "10m0.036s"),
	}
	for _, s := range []string{
		protocol.MsgID("gpu1", r),
		protocol.UsageSubject("gpu1", r.Contract), // its subject
		protocol.InboxPrefix("alice"),
		protocol.UsageStream,
		protocol.UsageSubjects,
		protocol.OutputStreamOf("gpu1"),
		protocol.OutputSubjectsOf("gpu1"),
		protocol.FilesBucketOf("alice"),
		protocol.FilesStreamOf("alice"),
		protocol.OutputMsgID("gpu1", r.Contract, protocol.StreamStdout, 21, []byte("epoch 2/90 loss 5.87\n")),
	} {
		if !strings.Contains(doc, s) {
			t.Errorf("%s does not mention %q", docPath, s)
		}
	}
}

// TestDocFieldPaths checks the field the doc quotes for a bad curve: the
// exchange names every field by its path in the request, so a terms field
// comes with "terms." before the name package contract gives it
// (exchange/badinput_test.go checks the exchange answers so).
func TestDocFieldPaths(t *testing.T) {
	doc := readDoc(t)
	terms := contract.Terms{
		Client: "alice", Currency: "CRED", GPUs: 1, TimeLimit: time.Minute, Prepayment: dectest.D("1"),
		P: contract.Curve{{X: dectest.D("1"), Y: dectest.D("0.01")}, {X: dectest.D("0.5"), Y: dectest.D("0.02")}},
	}
	err := contract.Validate(terms, func(string) (int32, bool) { return 2, true })
	var e *bourse.Error
	if !errors.As(err, &e) || e.Code != bourse.EInvalidCurve {
		t.Fatalf("an unsorted curve: %v", err)
	}
	want := "| `invalid_curve` |"
	row := ""
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, want) {
			row = line
		}
	}
	if !strings.Contains(row, "(`field` is e.g. `terms."+e.Field+"`)") {
		t.Errorf("%s: the invalid_curve row should quote the field terms.%s as the exchange reports it:\n%s", docPath, e.Field, row)
	}
}

// TestDocSubjects checks that the doc names every subject of the protocol.
func TestDocSubjects(t *testing.T) {
	doc := readDoc(t)
	var want []string
	for _, v := range []string{protocol.VerbOffer, protocol.VerbSuspend, protocol.VerbKill, protocol.VerbContract,
		protocol.VerbContracts, protocol.VerbBalance, protocol.VerbStatement, protocol.VerbLogs, protocol.VerbResults, protocol.VerbQuote,
		protocol.VerbCancel, protocol.VerbWaiting, protocol.VerbServers, protocol.VerbFiles} {
		want = append(want, protocol.ClientSubject("<client>", v))
	}
	for _, v := range []string{protocol.VerbHello, protocol.VerbHeartbeat, protocol.VerbStarted, protocol.VerbReadings, protocol.VerbReceipts, protocol.VerbFetch} {
		want = append(want, protocol.ServerSubject("<server>", v))
	}
	want = append(want, protocol.UsageSubject("<server>", "<contract>"), protocol.OutputSubject("<server>", "<contract>", "<part>"))
	for _, v := range []string{protocol.DeliverOffer, protocol.DeliverStart, protocol.DeliverCancel, protocol.DeliverControl, protocol.DeliverQuote, protocol.DeliverReceipts} {
		want = append(want, protocol.DeliverSubject("<server>", v))
	}
	want = append(want, protocol.DeliverSubject("<client>", protocol.DeliverEvent), protocol.MarketSubject("<currency>"))
	for _, s := range want {
		if !strings.Contains(doc, "`"+s+"`") {
			t.Errorf("%s does not name the subject `%s`", docPath, s)
		}
	}
}

// TestDocVocabulary checks that the doc explains every error code of
// error.go (in its table) and every state, stop reason (package contract)
// and event type (package protocol), found by reading the source so that a new constant
// cannot go undocumented.
func TestDocVocabulary(t *testing.T) {
	doc := readDoc(t)
	for _, c := range stringConsts(t, "../error.go", "Code") {
		if !strings.Contains(doc, "| `"+c+"` |") {
			t.Errorf("%s: the error table lacks a row for code `%s`", docPath, c)
		}
	}
	for _, typ := range []string{"State", "Reason", "EventType", "Meter"} {
		consts := stringConsts(t, "../contract/contract.go", typ)
		consts = append(consts, stringConsts(t, "../contract/meter.go", typ)...)
		consts = append(consts, stringConsts(t, "messages.go", typ)...)
		if len(consts) == 0 {
			t.Fatalf("no constants of type %s found", typ)
		}
		for _, c := range consts {
			if !strings.Contains(doc, "`"+c+"`") {
				t.Errorf("%s does not explain %s `%s`", docPath, typ, c)
			}
		}
	}
}

// stringConsts returns the values of the string constants of type typ
// declared in file.
func stringConsts(t *testing.T, file, typ string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typ {
				continue
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, s)
				}
			}
		}
	}
	return out
}

func readDoc(t *testing.T) string {
	t.Helper()
	var doc strings.Builder
	for _, p := range docPages(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		doc.Write(b)
		doc.WriteString("\n")
	}
	return doc.String()
}

// ptr is a pointer to v, for the fields an example leaves out where nil.
func ptr[T any](v T) *T { return &v }
