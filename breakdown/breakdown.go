// Package breakdown adds up what contracts cost, by organisation, project,
// client, GPU model and day or month, with each server's sales (and, given
// its size, its idle GPU-seconds) and the average price of a GPU-second:
// the reports administrators read in the console and in bourse admin
// report. It reads the exchange's contract records and the wallets'
// hierarchy; the ledger's own figures stay the truth for money.
package breakdown

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
)

// Source lists contracts by when they were accepted (exchange.Store).
type Source interface {
	Between(ctx context.Context, from, to time.Time, after string, limit int) ([]contract.Contract, error)
}

// Accounts finds a wallet's parent, and when a server first said hello
// (currency.Ledger).
type Accounts interface {
	Account(ctx context.Context, id currency.AccountID) (currency.Account, error)
	Currencies(ctx context.Context) ([]currency.Currency, error)
}

// By is the length of a report's periods, UTC.
type By string

const (
	Day   By = "day"
	Month By = "month"
)

// period names the period of at and gives its bounds.
func (b By) period(at time.Time) (string, time.Time, time.Time) {
	at = at.UTC()
	if b == Month {
		s := time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC)
		return s.Format("2006-01"), s, s.AddDate(0, 1, 0)
	}
	s := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
	return s.Format("2006-01-02"), s, s.AddDate(0, 0, 1)
}

// Line is what one client's contracts on one GPU model cost in a period.
type Line struct {
	Period     string          `json:"period"`
	Currency   string          `json:"currency"`
	Org        string          `json:"org,omitempty"`
	Project    string          `json:"project,omitempty"`
	Client     string          `json:"client"`
	Model      string          `json:"model"`
	Contracts  int             `json:"contracts"`
	GPUSeconds decimal.Decimal `json:"gpu_seconds"`
	Cost       decimal.Decimal `json:"cost"`
}

// ServerLine is what a server sold in a period. Capacity and Idle are in
// GPU-seconds, zero where the report was not told the server's size.
type ServerLine struct {
	Period     string          `json:"period"`
	Server     string          `json:"server"`
	Currency   string          `json:"currency"`
	Contracts  int             `json:"contracts"`
	GPUSeconds decimal.Decimal `json:"gpu_seconds"`
	Revenue    decimal.Decimal `json:"revenue"`
	Capacity   decimal.Decimal `json:"capacity_gpu_seconds,omitzero"`
	Idle       decimal.Decimal `json:"idle_gpu_seconds,omitzero"`
}

// PriceLine is the average charge of a GPU-second in a period.
type PriceLine struct {
	Period       string          `json:"period"`
	Currency     string          `json:"currency"`
	GPUSeconds   decimal.Decimal `json:"gpu_seconds"`
	Cost         decimal.Decimal `json:"cost"`
	PerGPUSecond decimal.Decimal `json:"per_gpu_second"`
}

// Report is a breakdown of the contracts accepted in [From, To).
type Report struct {
	From    time.Time    `json:"from"`
	To      time.Time    `json:"to"`
	By      By           `json:"by"`
	Lines   []Line       `json:"lines"`
	Servers []ServerLine `json:"servers"`
	Prices  []PriceLine  `json:"prices"`
	// Trend is the prices again, in buckets fine enough to draw.
	Trend Trend `json:"trend,omitzero"`
}

// Options shape a report.
type Options struct {
	From, To time.Time
	By       By // Day if empty
	// Capacity is each server's GPUs, for its idle line; servers not in
	// it get none. A server is counted idle only while it existed: from
	// its first hello (when its revenue account was opened) to Now.
	Capacity map[string]int
	// Now is the report's clock: no capacity is counted after it, where
	// To is in the future. Zero counts up to To.
	Now time.Time
}

// page is how many contracts Build reads at a time.
const page = 1000

// Build adds up the contracts accepted in [o.From, o.To) that have ended
// (settled or voided): each counts in the period it was accepted in, with
// the GPU-seconds of its last reading and its charge.
func Build(ctx context.Context, src Source, accts Accounts, o Options) (Report, error) {
	if o.By == "" {
		o.By = Day
	}
	if o.By != Day && o.By != Month {
		return Report{}, &bourse.Error{Code: bourse.EInvalid, Op: "breakdown.Build", Field: "by", Message: fmt.Sprintf("%q: day or month", o.By)}
	}
	if !o.To.After(o.From) {
		return Report{}, &bourse.Error{Code: bourse.EInvalid, Op: "breakdown.Build", Field: "to",
			Message: fmt.Sprintf("%s is not after %s", o.To.Format(time.RFC3339), o.From.Format(time.RFC3339))}
	}
	r := Report{From: o.From.UTC(), To: o.To.UTC(), By: o.By}
	lines := map[Line]*Line{}
	servers := map[ServerLine]*ServerLine{}
	h := hierarchy{accts: accts, chains: map[currency.AccountID][]string{}}
	tr := newTrend()
	after := ""
	for {
		cs, err := src.Between(ctx, o.From, o.To, after, page)
		if err != nil {
			return Report{}, fmt.Errorf("breakdown: contracts: %w", err)
		}
		for _, c := range cs {
			if !c.State.Ended() {
				continue
			}
			org, project, err := h.of(ctx, currency.Code(c.Terms.Currency), c.Client)
			if err != nil {
				return Report{}, err
			}
			p, _, _ := o.By.period(c.AcceptedAt)
			var u decimal.Decimal
			if c.Reading != nil {
				u = c.Reading.U
			}
			k := Line{Period: p, Currency: c.Terms.Currency, Org: org, Project: project, Client: c.Client, Model: model(c)}
			l := lines[k]
			if l == nil {
				l = &k
				lines[k] = l
			}
			l.Contracts++
			l.GPUSeconds, l.Cost = l.GPUSeconds.Add(u), l.Cost.Add(c.Charge)
			sk := ServerLine{Period: p, Server: c.Server, Currency: c.Terms.Currency}
			s := servers[sk]
			if s == nil {
				s = &sk
				servers[sk] = s
			}
			s.Contracts++
			s.GPUSeconds, s.Revenue = s.GPUSeconds.Add(u), s.Revenue.Add(c.Charge)
			tr.add(c.AcceptedAt, c.Terms.Currency, u, c.Charge)
		}
		if len(cs) < page {
			break
		}
		after = cs[len(cs)-1].ID
	}
	for _, l := range lines {
		r.Lines = append(r.Lines, *l)
	}
	slices.SortFunc(r.Lines, func(a, b Line) int {
		return cmp.Or(strings.Compare(a.Period, b.Period), strings.Compare(a.Currency, b.Currency), strings.Compare(a.Org, b.Org),
			strings.Compare(a.Project, b.Project), strings.Compare(a.Client, b.Client), strings.Compare(a.Model, b.Model))
	})
	since, err := registered(ctx, accts, o.Capacity)
	if err != nil {
		return Report{}, err
	}
	r.Servers = serverLines(servers, o, since)
	r.Prices = prices(r.Lines)
	r.Trend = tr.result()
	return r, nil
}

// registered is when each server of capacity first said hello: the
// earliest opening of its revenue accounts, in any currency. A server that
// never did is not there.
func registered(ctx context.Context, accts Accounts, capacity map[string]int) (map[string]time.Time, error) {
	since := map[string]time.Time{}
	if len(capacity) == 0 {
		return since, nil
	}
	curs, err := accts.Currencies(ctx)
	if err != nil {
		return nil, fmt.Errorf("breakdown: currencies: %w", err)
	}
	for server := range capacity {
		for _, c := range curs {
			a, err := accts.Account(ctx, currency.RevenueID(c.Code, server))
			if bourse.ErrorCode(err) == bourse.ENotFound {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("breakdown: revenue account of %s: %w", server, err)
			}
			if t, ok := since[server]; !ok || a.Created.Before(t) {
				since[server] = a.Created
			}
		}
	}
	return since, nil
}

// serverLines are the servers' sales, with the idle GPU-seconds of those
// whose size is known: every period of the report in which the server
// existed (since its first hello, up to o.Now), sold or not.
func serverLines(sold map[ServerLine]*ServerLine, o Options, since map[string]time.Time) []ServerLine {
	until := o.To
	if !o.Now.IsZero() && o.Now.Before(until) {
		until = o.Now
	}
	for server, gpus := range o.Capacity {
		first, ok := since[server]
		if !ok {
			continue // it never said hello: nothing stood idle
		}
		from := later(o.From, first)
		for at := from; at.Before(until); {
			p, start, end := o.By.period(at)
			// Each currency the server sold in gets the idle line; a
			// period it sold nothing in gets one line of its own.
			found := false
			for k := range sold {
				if k.Server == server && k.Period == p {
					found = true
				}
			}
			if !found {
				k := ServerLine{Period: p, Server: server}
				sold[k] = &k
			}
			secs := decimal.NewFromFloat(earlier(end, until).Sub(later(start, from)).Seconds())
			for k, s := range sold {
				if k.Server == server && k.Period == p {
					s.Capacity = secs.Mul(decimal.NewFromInt(int64(gpus)))
					s.Idle = decimal.Max(decimal.Zero, s.Capacity.Sub(s.GPUSeconds))
				}
			}
			at = end
		}
	}
	out := make([]ServerLine, 0, len(sold))
	for _, k := range slices.SortedFunc(maps.Keys(sold), func(a, b ServerLine) int {
		return cmp.Or(strings.Compare(a.Period, b.Period), strings.Compare(a.Server, b.Server), strings.Compare(a.Currency, b.Currency))
	}) {
		out = append(out, *sold[k])
	}
	return out
}

// prices are the average charge per GPU-second of each period and currency.
func prices(lines []Line) []PriceLine {
	var out []PriceLine
	for _, l := range lines {
		if n := len(out); n > 0 && out[n-1].Period == l.Period && out[n-1].Currency == l.Currency {
			out[n-1].GPUSeconds, out[n-1].Cost = out[n-1].GPUSeconds.Add(l.GPUSeconds), out[n-1].Cost.Add(l.Cost)
			continue
		}
		out = append(out, PriceLine{Period: l.Period, Currency: l.Currency, GPUSeconds: l.GPUSeconds, Cost: l.Cost})
	}
	for i := range out {
		if out[i].GPUSeconds.IsPositive() {
			out[i].PerGPUSecond = out[i].Cost.DivRound(out[i].GPUSeconds, 6)
		}
	}
	return out
}

func model(c contract.Contract) string { return contract.ModelSold(c.Model, c.Terms.Class) }

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// hierarchy finds a client's project and organisation from its wallet's
// parents: a client under a project under an organisation, or directly
// under an organisation.
type hierarchy struct {
	accts  Accounts
	chains map[currency.AccountID][]string
}

func (h hierarchy) of(ctx context.Context, cur currency.Code, client string) (org, project string, err error) {
	w := currency.WalletID(cur, client)
	chain, ok := h.chains[w]
	if !ok {
		prefix := string(currency.WalletID(cur, ""))
		id := w
		for range 8 {
			a, err := h.accts.Account(ctx, id)
			if err != nil || a.Parent == "" {
				break // a client without a wallet any more counts alone
			}
			chain = append(chain, strings.TrimPrefix(string(a.Parent), prefix))
			id = a.Parent
		}
		h.chains[w] = chain
	}
	switch len(chain) {
	case 0:
		return "", "", nil
	case 1:
		return chain[0], "", nil
	}
	return chain[len(chain)-1], chain[0], nil
}

// ParseCapacity reads servers' sizes written "gpu1=8,gpu2=4".
func ParseCapacity(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, n, ok := strings.Cut(part, "=")
		gpus, err := strconv.Atoi(n)
		if !ok || name == "" || err != nil || gpus <= 0 {
			return nil, fmt.Errorf("%q: SERVER=GPUS, comma-separated (gpu1=8,gpu2=4)", part)
		}
		out[name] = gpus
	}
	return out, nil
}
