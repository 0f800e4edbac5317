package console

import (
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
	"github.com/bourse/bourse/treasury"
)

// maxWallets bounds the wallets a currency's overview lists.
const maxWallets = 5000

// walletRow is a wallet in the overview's tree: its own money and, with
// everything under it (its projects, their clients), the total.
type walletRow struct {
	ID                   currency.AccountID
	Owner                string
	Depth                int
	Available, Held      string
	TotalAvail, TotalHel string
	Parent               bool
}

type currencyView struct {
	Code     currency.Code
	Scale    int32
	Supply   string
	Wallets  []walletRow
	Revenue  []walletRow
	Truncate bool
}

func (c *Console) overview(r *http.Request, v *view) error {
	v.Page, v.Title = "overview", "Balances"
	ctx := r.Context()
	l := c.cfg.Treasury.Ledger()
	cs, err := l.Currencies(ctx)
	if err != nil {
		return err
	}
	var out []currencyView
	for _, cur := range cs {
		if caps.Unit(cur.Code) { // the caps' GPUs and budgets: on the caps page
			continue
		}
		cv := currencyView{Code: cur.Code, Scale: cur.Scale}
		iss, err := l.Balance(ctx, currency.IssuanceID(cur.Code))
		if err != nil {
			return err
		}
		cv.Supply = currency.Format(iss.Available.Neg(), cur.Scale)
		if cv.Wallets, cv.Truncate, err = c.walletTree(r, cur); err != nil {
			return err
		}
		revs, err := l.Accounts(ctx, currency.AccountQuery{Currency: cur.Code, Kind: currency.Revenue, Limit: currency.MaxPage})
		if err != nil {
			return err
		}
		for _, a := range revs {
			b, err := l.Balance(ctx, a.ID)
			if err != nil {
				return err
			}
			cv.Revenue = append(cv.Revenue, walletRow{ID: a.ID, Owner: owner(a.ID), Available: currency.Format(b.Available, cur.Scale)})
		}
		out = append(out, cv)
	}
	v.Data = out
	return nil
}

// walletTree lists cur's wallets as a tree by parent, each with its own
// balance and its subtree's.
func (c *Console) walletTree(r *http.Request, cur currency.Currency) ([]walletRow, bool, error) {
	ctx := r.Context()
	l := c.cfg.Treasury.Ledger()
	type node struct {
		acc      currency.Account
		bal      currency.Balance
		children []currency.AccountID
	}
	nodes := map[currency.AccountID]*node{}
	q := currency.AccountQuery{Currency: cur.Code, Kind: currency.Wallet, Limit: currency.MaxPage}
	truncated := false
	for {
		page, err := l.Accounts(ctx, q)
		if err != nil {
			return nil, false, err
		}
		for _, a := range page {
			b, err := l.Balance(ctx, a.ID)
			if err != nil {
				return nil, false, err
			}
			nodes[a.ID] = &node{acc: a, bal: b}
		}
		if len(page) < q.PageLimit() {
			break
		}
		if len(nodes) >= maxWallets {
			truncated = true
			break
		}
		q.After = page[len(page)-1].ID
	}
	var roots []currency.AccountID
	for id, n := range nodes {
		if p, ok := nodes[n.acc.Parent]; ok {
			p.children = append(p.children, id)
		} else {
			roots = append(roots, id)
		}
	}
	var rows []walletRow
	var walk func(id currency.AccountID, depth int) (decimal.Decimal, decimal.Decimal)
	walk = func(id currency.AccountID, depth int) (decimal.Decimal, decimal.Decimal) {
		n := nodes[id]
		i := len(rows)
		rows = append(rows, walletRow{ID: id, Owner: owner(id), Depth: depth, Available: currency.Format(n.bal.Available, cur.Scale),
			Held: currency.Format(n.bal.Held, cur.Scale), Parent: len(n.children) > 0})
		avail, held := n.bal.Available, n.bal.Held
		slices.Sort(n.children)
		for _, ch := range n.children {
			a, h := walk(ch, depth+1)
			avail, held = avail.Add(a), held.Add(h)
		}
		rows[i].TotalAvail, rows[i].TotalHel = currency.Format(avail, cur.Scale), currency.Format(held, cur.Scale)
		return avail, held
	}
	slices.Sort(roots)
	for _, id := range roots {
		walk(id, 0)
	}
	return rows, truncated, nil
}

func owner(id currency.AccountID) string {
	parts := strings.SplitN(string(id), "/", 3)
	return parts[len(parts)-1]
}

type supplyView struct {
	Currencies []currency.Code
	Currency   currency.Code
	Scale      int32
	// Points are one page of the supply's history, newest first.
	Points []treasury.SupplyPoint
	pager
	Chart template.HTML
}

func (c *Console) supply(r *http.Request, v *view) error {
	v.Page, v.Title = "supply", "Money supply"
	ctx := r.Context()
	cs, err := c.cfg.Treasury.Ledger().Currencies(ctx)
	if err != nil {
		return err
	}
	var sv supplyView
	for _, cur := range cs {
		if !caps.Unit(cur.Code) {
			sv.Currencies = append(sv.Currencies, cur.Code)
		}
	}
	sv.Currency = currency.Code(r.URL.Query().Get("currency"))
	if sv.Currency == "" && len(sv.Currencies) > 0 {
		sv.Currency = sv.Currencies[0]
	}
	if sv.Currency != "" {
		cur, err := c.cfg.Treasury.Ledger().Currency(ctx, sv.Currency)
		if err != nil {
			return err
		}
		sv.Scale = cur.Scale
		// The supply is the issuance account's balance, negated: its
		// chart and its statement, a page at a time, as an account's.
		issuance := currency.IssuanceID(sv.Currency)
		s, last, err := balanceHistory(ctx, c.cfg.Treasury.Ledger(), issuance)
		if err != nil {
			return err
		}
		s.Name = "supply of " + string(sv.Currency)
		for i := range s.Y {
			s.Y[i] = -s.Y[i]
		}
		sv.Chart = lineChart("supply of "+string(sv.Currency), []series{s}, 720, 240)
		link := func(before int64) string {
			u := url.Values{"currency": {string(sv.Currency)}}
			if before <= last {
				u.Set("before", strconv.FormatInt(before, 10))
			}
			return "/supply?" + u.Encode()
		}
		es, pg, err := statementAt(ctx, c.cfg.Treasury.Ledger(), issuance, last, r.URL.Query().Get("before"), link)
		if err != nil {
			return err
		}
		sv.pager = pg
		for _, e := range es {
			sv.Points = append(sv.Points, treasury.PointOf(e))
		}
	}
	v.Data = sv
	return nil
}

type allowanceRow struct {
	Rule     allowance.Rule
	Owner    string
	Currency currency.Code
	// A is money an hour, in the currency's places; B a rate, written
	// as the column's others.
	A, B     string
	Steady   string
	HalfLife string
	Balance  string
	Chart    template.HTML
}

func (c *Console) allowances(r *http.Request, v *view) error {
	v.Page, v.Title = "allowances", "Allowances"
	ctx := r.Context()
	rules, err := c.cfg.Treasury.Allowances(ctx)
	if err != nil {
		return err
	}
	l := c.cfg.Treasury.Ledger()
	var rows []allowanceRow
	for _, rule := range rules {
		a, err := l.Account(ctx, rule.Wallet)
		if err != nil {
			return err
		}
		cur, err := l.Currency(ctx, a.Currency)
		if err != nil {
			return err
		}
		b, err := l.Balance(ctx, rule.Wallet)
		if err != nil {
			return err
		}
		row := allowanceRow{Rule: rule, Owner: owner(rule.Wallet), Currency: a.Currency, A: currency.Format(rule.A, cur.Scale),
			Balance: currency.Format(b.Available, cur.Scale), Steady: "none (b = 0)", HalfLife: "-"}
		if st, ok := rule.Steady(); ok {
			row.Steady, row.HalfLife = currency.Format(st, cur.Scale), rule.HalfLife().Round(time.Second).String()
		}
		// Where the balance goes from now if nothing is spent: a week.
		now := c.cfg.Now()
		s := series{Name: "projected balance"}
		for i := 0; i <= 56; i++ {
			d := time.Duration(i) * 3 * time.Hour
			s.At, s.Y = append(s.At, now.Add(d)), append(s.Y, rule.Project(b.Available, d, cur.Scale).InexactFloat64())
		}
		row.Chart = lineChart("projected balance of "+row.Owner+", a week", []series{s}, 480, 160)
		rows = append(rows, row)
	}
	var bs []decimal.Decimal
	for _, row := range rows {
		bs = append(bs, row.Rule.B)
	}
	for i, b := range column(bs) {
		rows[i].B = b
	}
	v.Data = rows
	return nil
}

type capsView struct {
	GPU   []gpuRow
	Spend []spendRow
}

type gpuRow struct {
	treasury.Cap
	Bar template.HTML
}

type spendRow struct {
	treasury.SpendUse
	// Used, Held and Limit in the currency's places.
	UsedText, HeldText, LimitText string
	Share                         string
	Bar                           template.HTML
}

func (c *Console) caps(r *http.Request, v *view) error {
	v.Page, v.Title = "caps", "Caps"
	ctx := r.Context()
	gpu, err := c.cfg.Treasury.Caps(ctx)
	if err != nil {
		return err
	}
	uses, err := c.cfg.Treasury.SpendUses(ctx)
	if err != nil {
		return err
	}
	scales, err := c.scales(r)
	if err != nil {
		return err
	}
	var cv capsView
	for _, g := range gpu {
		cv.GPU = append(cv.GPU, gpuRow{Cap: g, Bar: bar(float64(g.InUse), float64(g.GPUs), 0)})
	}
	for _, u := range uses {
		row := spendRow{SpendUse: u, Share: u.UsedPercent().String() + "%", UsedText: money(u.Used, u.Currency, scales), HeldText: money(u.Held, u.Currency, scales),
			LimitText: money(u.Limit, u.Currency, scales)}
		row.Bar = bar(u.Used.InexactFloat64(), u.Limit.InexactFloat64(), u.Warn.InexactFloat64())
		cv.Spend = append(cv.Spend, row)
	}
	v.Data = cv
	return nil
}

type ratesView struct {
	Rates  []rateRow
	Prices []priceRow
}

// rateRow is a rate written as the others of its column.
type rateRow struct {
	treasury.ConversionRate
	Text string
}

// priceRow is a price with what its sales have been paid so far (what is
// in the proceeds wallet: administrators may have taken some out).
type priceRow struct {
	Sale     treasury.Price
	Price    string // written as the others of its column
	Proceeds currency.AccountID
	Paid     string
}

func (c *Console) rates(r *http.Request, v *view) error {
	v.Page, v.Title = "rates", "Rates, exchange and sales"
	ctx := r.Context()
	rs, err := c.cfg.Treasury.Rates(ctx)
	if err != nil {
		return err
	}
	ps, err := c.cfg.Treasury.Prices(ctx)
	if err != nil {
		return err
	}
	var rv ratesView
	var rates, prices []decimal.Decimal
	for _, rt := range rs {
		rv.Rates, rates = append(rv.Rates, rateRow{ConversionRate: rt}), append(rates, rt.Rate)
	}
	for i, t := range column(rates) {
		rv.Rates[i].Text = t
	}
	for _, p := range ps {
		l := c.cfg.Treasury.Ledger()
		cur, err := l.Currency(ctx, p.PaidIn)
		if err != nil {
			return err
		}
		row := priceRow{Sale: p, Proceeds: treasury.ProceedsID(p.Sold, p.PaidIn), Paid: currency.Format(decimal.Zero, cur.Scale)}
		b, err := l.Balance(ctx, row.Proceeds)
		switch {
		case err == nil:
			row.Paid = currency.Format(b.Available, cur.Scale)
		case bourse.ErrorCode(err) != bourse.ENotFound: // not opened: nothing sold yet
			return err
		}
		rv.Prices, prices = append(rv.Prices, row), append(prices, p.Price)
	}
	for i, t := range column(prices) {
		rv.Prices[i].Price = t
	}
	v.Data = rv
	return nil
}
