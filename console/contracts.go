package console

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/breakdown"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
)

// Contracts is what the console reads of the exchange's contracts: the
// report's listing by time and each one by id (exchange.Store has both).
type Contracts interface {
	breakdown.Source
	Contract(ctx context.Context, id string) (contract.Contract, error)
}

// contractsPage is how many contracts a page of the list shows.
const contractsPage = 50

type contractsView struct {
	From, To, Client, State string
	Rows                    []contractRow
	// Next is the link to the page after this one, empty at the end.
	Next     string
	NoSource bool
	States   []contract.State
	// from, to and scales are the list's days and its currencies' places,
	// for its CSV.
	from, to time.Time
	scales   map[currency.Code]int32
}

// contractRow is a contract with its money in its currency's places, the
// GPU model it sold and, while it runs, what its last reading makes due.
type contractRow struct {
	contract.Contract
	Prepayment, Charge, Refund string
	// Sold is the model sold (contract.ModelSold); Due, for a running
	// contract with a reading, the charge so far, which Charge then
	// shows as "~due" (its charge is known only at settlement).
	Sold, Due string
}

func rowOf(k contract.Contract, scales map[currency.Code]int32) contractRow {
	cur := currency.Code(k.Terms.Currency)
	row := contractRow{Contract: k, Prepayment: money(k.Terms.Prepayment, cur, scales), Charge: money(k.Charge, cur, scales), Refund: money(k.Refund, cur, scales),
		Sold: contract.ModelSold(k.Model, k.Terms.Class)}
	if scale, ok := scales[cur]; ok {
		if due, ok := k.DueSoFar(scale); ok {
			row.Due = currency.Format(due, scale)
			row.Charge = "~" + row.Due
		}
	}
	if !k.Ended() {
		row.Refund = "-" // known at settlement, as the charge is
		if row.Due == "" {
			row.Charge = "-"
		}
	}
	return row
}

// contracts lists the contracts accepted in a range of days, newest
// first (as bourse bid contracts lists a client's), a page at a time
// (?before=TIME&id=ID, the oldest shown so far), of one client or in one
// state if asked.
func (c *Console) contracts(r *http.Request, v *view) error {
	v.Page, v.Title = "contracts", "Contracts"
	q := r.URL.Query()
	now := c.cfg.Now().UTC()
	cv := contractsView{From: cmp.Or(q.Get("from"), now.AddDate(0, 0, -1).Format(time.DateOnly)), To: cmp.Or(q.Get("to"), now.AddDate(0, 0, 1).Format(time.DateOnly)),
		Client: q.Get("client"), State: q.Get("state"), States: []contract.State{contract.StateAccepted, contract.StateRunning, contract.StateSettled, contract.StateVoided}}
	v.Data = &cv
	if c.cfg.Contracts == nil {
		cv.NoSource = true
		return nil
	}
	var err error
	if cv.from, cv.to, err = dayRange(cv.From, cv.To); err != nil {
		return err
	}
	if cv.scales, err = c.scales(r); err != nil {
		return err
	}
	cur := breakdown.Cursor{At: cv.to}
	if b := q.Get("before"); b != "" {
		if cur.At, err = time.Parse(time.RFC3339Nano, b); err != nil {
			return &bourse.Error{Code: bourse.EInvalid, Field: "before", Message: fmt.Sprintf("%q: a time such as 2026-11-01T10:00:00Z", b)}
		}
		cur.ID = q.Get("id")
	}
	ks, more, err := breakdown.Newest(r.Context(), c.cfg.Contracts, cv.from, cur, breakdown.Filter{Client: cv.Client, State: cv.State}, contractsPage)
	if err != nil {
		return err
	}
	for _, k := range ks {
		cv.Rows = append(cv.Rows, rowOf(k, cv.scales))
	}
	if more {
		last := ks[len(ks)-1]
		u := url.Values{"from": {cv.From}, "to": {cv.To}, "before": {last.AcceptedAt.UTC().Format(time.RFC3339Nano)}, "id": {last.ID}}
		for k, val := range map[string]string{"client": cv.Client, "state": cv.State} {
			if val != "" {
				u.Set(k, val)
			}
		}
		cv.Next = "/contracts?" + u.Encode()
	}
	return nil
}

// dayRange reads a range of days, from's start to to's.
func dayRange(fromText, toText string) (time.Time, time.Time, error) {
	from, err := time.Parse(time.DateOnly, fromText)
	if err != nil {
		return time.Time{}, time.Time{}, &bourse.Error{Code: bourse.EInvalid, Field: "from", Message: fmt.Sprintf("%q: a date such as 2026-11-01", fromText)}
	}
	to, err := time.Parse(time.DateOnly, toText)
	if err != nil {
		return time.Time{}, time.Time{}, &bourse.Error{Code: bourse.EInvalid, Field: "to", Message: fmt.Sprintf("%q: a date such as 2026-12-01", toText)}
	}
	return from, to, nil
}

type contractView struct {
	contractRow
	// P and Q are the price curves, point by point, per second as the
	// wire has them; PHour and QHour per hour, at the currency's places.
	P, Q, PHour, QHour string
	// Job is what ran (contract.JobSpec.Describe); Exit the job's exit
	// status, where its server reported one; Meter what the meter means
	// for the charge (contract.Meter.Says).
	Job, Exit, Meter string
	// Wallet, Revenue and Escrow are the accounts the contract's money
	// moved between (Escrow empty once the ledger has none).
	Wallet, Revenue, Escrow currency.AccountID
}

// contractPage is one contract: its terms, its life, its reading and its
// money, with links to the accounts it moved money between.
func (c *Console) contractPage(r *http.Request, v *view) error {
	v.Page, v.Title = "contract", "Contract"
	if c.cfg.Contracts == nil {
		return &bourse.Error{Code: bourse.ENotFound, Message: "this console has no contract store (run it with --db on the exchange's database)"}
	}
	id := r.URL.Query().Get("id")
	k, err := c.cfg.Contracts.Contract(r.Context(), id)
	if err != nil {
		return err
	}
	v.Title = "Contract " + id
	scales, err := c.scales(r)
	if err != nil {
		return err
	}
	cur := currency.Code(k.Terms.Currency)
	scale, ok := scales[cur]
	if !ok {
		scale = -1
	}
	cv := contractView{contractRow: rowOf(k, scales), P: curveText(k.Terms.P, decimal.Decimal.String), Q: curveText(k.Terms.Q, decimal.Decimal.String),
		PHour: curveText(k.Terms.P, hourPrice(scale)), QHour: curveText(k.Terms.Q, hourPrice(scale)),
		Job: k.Terms.Job.Describe(k.Image), Meter: string(k.Meter) + ": " + k.Meter.Says(), Exit: "-",
		Wallet: currency.WalletID(cur, k.Client), Revenue: currency.RevenueID(cur, k.Server)}
	if k.Meter == "" {
		cv.Meter = k.Meter.Says()
	}
	if r := k.Reading; r != nil && r.ExitCode != nil {
		cv.Exit = strconv.Itoa(*r.ExitCode)
	}
	escrow := currency.EscrowID(currency.HoldID(k.ID))
	switch _, err := c.cfg.Treasury.Ledger().Account(r.Context(), escrow); {
	case err == nil:
		cv.Escrow = escrow
	case bourse.ErrorCode(err) != bourse.ENotFound:
		return err
	}
	v.Data = cv
	return nil
}

// curveText writes a price curve as its points, each price by price:
// "0 → 0.35, 4 → 0.40".
func curveText(cv contract.Curve, price func(decimal.Decimal) string) string {
	if len(cv) == 0 {
		return "none"
	}
	if len(cv) == 1 && cv[0].X.IsZero() {
		return price(cv[0].Y) // flat
	}
	var parts []string
	for _, p := range cv {
		parts = append(parts, p.X.String()+" → "+price(p.Y))
	}
	return strings.Join(parts, ", ")
}

// hourPrice writes a price per second per hour, at the places of a
// currency of scale.
func hourPrice(scale int32) func(decimal.Decimal) string {
	return func(d decimal.Decimal) string { return currency.FormatPrice(contract.PerHour(d), scale) }
}

// contractOfHold is the contract a ledger hold is for: its escrow holds
// the contract's id, its caps gpus/<id>[/<owner>] and spend/<id>/<n>
// (package caps).
func contractOfHold(h currency.HoldID) string {
	s := string(h)
	for _, prefix := range []string{"gpus/", "spend/"} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			id, _, _ := strings.Cut(rest, "/")
			return id
		}
	}
	return s
}
