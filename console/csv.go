package console

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/breakdown"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/safecsv"
)

// Every table of the console exports as CSV (GET /csv/NAME, with the
// page's own query: an account's id, a report's filters), whole where
// the page shows a page of it (a statement, the trail, the contracts).
// Cells go through internal/safecsv: an owner, a memo or a GPU model
// chosen by a party could otherwise be a formula that a spreadsheet runs.

// csvTable is one export: its columns, and its rows, each given to emit.
type csvTable struct {
	header []string
	rows   func(r *http.Request, emit func(...string) error) error
}

func (c *Console) csvTables() map[string]csvTable {
	return map[string]csvTable{
		"balances":   {[]string{"currency", "wallet", "owner", "depth", "available", "held", "total_available", "total_held"}, c.balancesCSV},
		"revenue":    {[]string{"currency", "account", "owner", "balance"}, c.revenueCSV},
		"account":    {[]string{"seq", "at", "amount", "balance", "counterparty", "contract", "key", "memo"}, c.accountCSV},
		"supply":     {[]string{"at", "change", "supply", "account", "key", "memo"}, c.supplyCSV},
		"allowances": {[]string{"wallet", "currency", "a_per_hour", "b_per_hour", "every", "steady", "half_life", "balance"}, c.allowancesCSV},
		"gpu-caps":   {[]string{"owner", "in_use", "cap"}, c.gpuCapsCSV},
		"spend-caps": {[]string{"owner", "currency", "period", "used", "held", "limit", "share"}, c.spendCapsCSV},
		"rates":      {[]string{"from", "to", "rate", "set_by", "set_at"}, c.ratesCSV},
		"prices":     {[]string{"sold", "paid_in", "price", "proceeds", "set_by", "set_at"}, c.pricesCSV},
		"cost":       {[]string{"period", "organisation", "project", "client", "model", "contracts", "gpu_seconds", "cost", "currency"}, c.costCSV},
		"servers":    {[]string{"period", "server", "contracts", "gpu_seconds", "revenue", "currency", "idle_gpu_seconds"}, c.serversCSV},
		"contracts":  {[]string{"contract", "accepted", "client", "server", "state", "reason", "gpus", "model", "prepayment", "charge", "refund", "currency", "gpu_seconds"}, c.contractsCSV},
		"market":     {[]string{"currency", "at", "model", "settled", "gpu_seconds_used", "charged", "low_per_gpu_hour", "median_per_gpu_hour", "high_per_gpu_hour", "vwap_per_gpu_hour", "gpus", "free", "waiting", "waiting_gpus", "best_waiting_per_gpu_hour"}, c.marketCSV},
		"audit":      {[]string{"at", "actor", "action", "target", "key", "changed", "memo", "request"}, c.auditCSV},
	}
}

// exportCSV serves a table as CSV to anyone logged in. An error before
// the first row is an HTTP error; after it, the connection is cut, so
// that a download that failed half-way is not taken for the whole table.
func (c *Console) exportCSV(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.sessionOr(w, r); !ok {
		return
	}
	name := r.PathValue("table")
	t, ok := c.csvTables()[name]
	if !ok {
		http.Error(w, "no table "+name, http.StatusNotFound)
		return
	}
	var cw *safecsv.Writer
	start := func() error {
		if cw != nil {
			return nil
		}
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="bourse-%s-%s.csv"`, name, c.cfg.Now().UTC().Format("20060102-150405")))
		w.Header().Set("Cache-Control", "no-store")
		cw = safecsv.NewWriter(w)
		return cw.Write(t.header)
	}
	err := t.rows(r, func(cells ...string) error {
		if err := start(); err != nil {
			return err
		}
		return cw.Write(cells)
	})
	if err == nil {
		err = start()
	}
	if err != nil {
		c.cfg.Logger.Warn("console csv", "table", name, "err", err)
		if cw == nil {
			http.Error(w, err.Error(), statusOf(err))
			return
		}
		panic(http.ErrAbortHandler)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		c.cfg.Logger.Warn("console csv", "table", name, "err", err)
	}
}

// page runs a page's own function for its data.
func page[T any](r *http.Request, p pageFunc) (T, error) {
	v := &view{}
	if err := p(r, v); err != nil {
		var zero T
		return zero, err
	}
	return v.Data.(T), nil
}

func (c *Console) balancesCSV(r *http.Request, emit func(...string) error) error {
	cvs, err := page[[]currencyView](r, c.overview)
	if err != nil {
		return err
	}
	for _, cv := range cvs {
		for _, w := range cv.Wallets {
			if err := emit(string(cv.Code), string(w.ID), w.Owner, strconv.Itoa(w.Depth), w.Available, w.Held, w.TotalAvail, w.TotalHel); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Console) revenueCSV(r *http.Request, emit func(...string) error) error {
	cvs, err := page[[]currencyView](r, c.overview)
	if err != nil {
		return err
	}
	for _, cv := range cvs {
		for _, a := range cv.Revenue {
			if err := emit(string(cv.Code), string(a.ID), a.Owner, a.Available); err != nil {
				return err
			}
		}
	}
	return nil
}

// accountCSV is an account's whole statement, oldest first.
func (c *Console) accountCSV(r *http.Request, emit func(...string) error) error {
	ctx := r.Context()
	l := c.cfg.Treasury.Ledger()
	id := currency.AccountID(r.URL.Query().Get("id"))
	a, err := l.Account(ctx, id)
	if err != nil {
		return err
	}
	cur, err := l.Currency(ctx, a.Currency)
	if err != nil {
		return err
	}
	var after int64
	for {
		es, err := l.Statement(ctx, id, after, currency.MaxPage)
		if err != nil {
			return err
		}
		for _, e := range es {
			k := ""
			if e.Hold != "" {
				k = contractOfHold(e.Hold)
			}
			if err := emit(strconv.FormatInt(e.Seq, 10), csvTime(e.At), currency.Format(e.Amount, cur.Scale), currency.Format(e.Balance, cur.Scale),
				string(e.Counterparty), k, e.Key, e.Memo); err != nil {
				return err
			}
		}
		if len(es) < currency.MaxPage {
			return nil
		}
		after = es[len(es)-1].Seq
	}
}

// supplyCSV is a currency's whole supply history, oldest first.
func (c *Console) supplyCSV(r *http.Request, emit func(...string) error) error {
	code := currency.Code(r.URL.Query().Get("currency"))
	if code == "" {
		return &bourse.Error{Code: bourse.EInvalid, Field: "currency", Message: "currency is required"}
	}
	cur, err := c.cfg.Treasury.Ledger().Currency(r.Context(), code)
	if err != nil {
		return err
	}
	ps, err := c.cfg.Treasury.Supply(r.Context(), code, 0)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := emit(csvTime(p.At), currency.Format(p.Change, cur.Scale), currency.Format(p.Supply, cur.Scale), string(p.Account), p.Key, p.Memo); err != nil {
			return err
		}
	}
	return nil
}

func (c *Console) allowancesCSV(r *http.Request, emit func(...string) error) error {
	rows, err := page[[]allowanceRow](r, c.allowances)
	if err != nil {
		return err
	}
	for _, a := range rows {
		if err := emit(string(a.Rule.Wallet), string(a.Currency), a.A, a.B, a.Rule.Period.String(), a.Steady, a.HalfLife, a.Balance); err != nil {
			return err
		}
	}
	return nil
}

func (c *Console) gpuCapsCSV(r *http.Request, emit func(...string) error) error {
	cv, err := page[capsView](r, c.caps)
	if err != nil {
		return err
	}
	for _, g := range cv.GPU {
		if err := emit(g.Client, strconv.FormatInt(g.InUse, 10), strconv.FormatInt(g.GPUs, 10)); err != nil {
			return err
		}
	}
	return nil
}

func (c *Console) spendCapsCSV(r *http.Request, emit func(...string) error) error {
	cv, err := page[capsView](r, c.caps)
	if err != nil {
		return err
	}
	for _, s := range cv.Spend {
		if err := emit(s.Owner, string(s.Currency), string(s.Period), s.UsedText, s.HeldText, s.LimitText, s.Share); err != nil {
			return err
		}
	}
	return nil
}

func (c *Console) ratesCSV(r *http.Request, emit func(...string) error) error {
	rv, err := page[ratesView](r, c.rates)
	if err != nil {
		return err
	}
	for _, rt := range rv.Rates {
		if err := emit(string(rt.From), string(rt.To), rt.Text, rt.SetBy, csvTime(rt.SetAt)); err != nil {
			return err
		}
	}
	return nil
}

func (c *Console) pricesCSV(r *http.Request, emit func(...string) error) error {
	rv, err := page[ratesView](r, c.rates)
	if err != nil {
		return err
	}
	for _, p := range rv.Prices {
		if err := emit(string(p.Sale.Sold), string(p.Sale.PaidIn), p.Price, p.Paid, p.Sale.SetBy, csvTime(p.Sale.SetAt)); err != nil {
			return err
		}
	}
	return nil
}

// report is the report page's data for its CSVs; a console without a
// contract store has none to give.
func (c *Console) reportData(r *http.Request) (*reportView, error) {
	rv, err := page[*reportView](r, c.report)
	if err == nil && rv.NoSource {
		err = &bourse.Error{Code: bourse.ENotFound, Message: "this console has no contract store to report on"}
	}
	return rv, err
}

func (c *Console) costCSV(r *http.Request, emit func(...string) error) error {
	rv, err := c.reportData(r)
	if err != nil {
		return err
	}
	for _, l := range rv.Lines {
		if err := emit(l.Period, l.Org, l.Project, l.Client, l.Model, strconv.Itoa(l.Contracts), l.GPUSeconds.StringFixed(1), rv.Money(l.Cost, l.Currency), l.Currency); err != nil {
			return err
		}
	}
	return nil
}

func (c *Console) serversCSV(r *http.Request, emit func(...string) error) error {
	rv, err := c.reportData(r)
	if err != nil {
		return err
	}
	for _, s := range rv.Report.Servers {
		idle := ""
		if s.Capacity.IsPositive() {
			idle = s.Idle.StringFixed(0)
		}
		if err := emit(s.Period, s.Server, strconv.Itoa(s.Contracts), s.GPUSeconds.StringFixed(1), rv.Money(s.Revenue, s.Currency), s.Currency, idle); err != nil {
			return err
		}
	}
	return nil
}

// contractsCSV is every contract of the list's days and filters.
func (c *Console) contractsCSV(r *http.Request, emit func(...string) error) error {
	cv, err := page[*contractsView](r, c.contracts)
	if err != nil {
		return err
	}
	if cv.NoSource {
		return &bourse.Error{Code: bourse.ENotFound, Message: "this console has no contract store to list"}
	}
	after := ""
	for {
		ks, more, err := breakdown.Matching(r.Context(), c.cfg.Contracts, cv.from, cv.to, after, breakdown.Filter{Client: cv.Client, State: cv.State}, currency.MaxPage)
		if err != nil {
			return err
		}
		for _, k := range ks {
			row := rowOf(k, cv.scales)
			u := ""
			if k.Reading != nil {
				u = k.Reading.U.StringFixed(1)
			}
			if err := emit(k.ID, csvTime(k.AcceptedAt), k.Client, k.Server, string(k.State), string(k.Reason), strconv.Itoa(k.Terms.GPUs), k.Terms.Class.Model,
				row.Prepayment, row.Charge, row.Refund, k.Terms.Currency, u); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
		after = ks[len(ks)-1].ID
	}
}

// auditCSV is the whole trail, newest first, as the page lists it.
func (c *Console) auditCSV(r *http.Request, emit func(...string) error) error {
	scales, err := c.scales(r)
	if err != nil {
		return err
	}
	before := ""
	for {
		acts, err := c.cfg.Treasury.Actions(r.Context(), before, currency.MaxPage)
		if err != nil {
			return err
		}
		for _, a := range acts {
			if err := emit(csvTime(a.At), a.Actor, a.Kind, a.Target, a.Key, changed(a, scales), a.Memo, a.Request); err != nil {
				return err
			}
		}
		if len(acts) < currency.MaxPage {
			return nil
		}
		before = acts[len(acts)-1].Key
	}
}

// csvTime is a time as spreadsheets read one: UTC, RFC 3339.
func csvTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
