package console

import (
	"cmp"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/breakdown"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
)

type reportView struct {
	From, To, By, Org, Project, Client string
	Capacity                           string
	// MarketCapacity is the servers' GPUs the market data said, used
	// where the form gives none, and when it said them.
	MarketCapacity     string
	MarketCapacityAt   time.Time
	Report             breakdown.Report
	Lines              []breakdown.Line
	Total              string
	Chart, Utilisation template.HTML
	NoSource           bool
	scales             map[currency.Code]int32
}

// Money is d in cur's places.
func (rv *reportView) Money(d decimal.Decimal, cur string) string {
	return money(d, currency.Code(cur), rv.scales)
}

func (c *Console) report(r *http.Request, v *view) error {
	v.Page, v.Title = "report", "Cost report"
	q := r.URL.Query()
	now := c.cfg.Now().UTC()
	rv := reportView{From: cmp.Or(q.Get("from"), now.AddDate(0, 0, -6).Format("2006-01-02")), To: cmp.Or(q.Get("to"), now.AddDate(0, 0, 1).Format("2006-01-02")),
		By: cmp.Or(q.Get("by"), "day"), Org: q.Get("org"), Project: q.Get("project"), Client: q.Get("client"), Capacity: q.Get("capacity")}
	v.Data = &rv
	if c.cfg.Contracts == nil {
		rv.NoSource = true
		return nil
	}
	from, to, err := dayRange(rv.From, rv.To)
	if err != nil {
		return err
	}
	capacity, err := breakdown.ParseCapacity(rv.Capacity)
	if err != nil {
		return &bourse.Error{Code: bourse.EInvalid, Field: "capacity", Message: err.Error()}
	}
	if len(capacity) == 0 {
		capacity, rv.MarketCapacityAt = c.marketCapacity()
		rv.MarketCapacity = capacityText(capacity)
	}
	rep, err := breakdown.Build(r.Context(), c.cfg.Contracts, c.cfg.Treasury.Ledger(), breakdown.Options{From: from, To: to, By: breakdown.By(rv.By), Capacity: capacity, Now: c.cfg.Now()})
	if err != nil {
		return err
	}
	rv.Report = rep
	if rv.scales, err = c.scales(r); err != nil {
		return err
	}
	total := map[string]decimal.Decimal{}
	for _, l := range rep.Lines {
		if (rv.Org == "" || l.Org == rv.Org) && (rv.Project == "" || l.Project == rv.Project) && (rv.Client == "" || l.Client == rv.Client) {
			rv.Lines = append(rv.Lines, l)
			total[l.Currency] = total[l.Currency].Add(l.Cost)
		}
	}
	var parts []string
	for cur, t := range total {
		parts = append(parts, rv.Money(t, cur)+" "+cur)
	}
	sort.Strings(parts)
	rv.Total = strings.Join(parts, ", ")
	rv.Chart = priceChart(rep.Trend)
	if len(capacity) > 0 {
		util := map[string]*series{}
		var servers []string
		for _, s := range rep.Servers {
			if !s.Capacity.IsPositive() {
				continue
			}
			u := util[s.Server]
			if u == nil {
				u = &series{Name: s.Server}
				util[s.Server] = u
				servers = append(servers, s.Server)
			}
			at, _ := time.Parse(periodLayout(rv.By), s.Period)
			u.At, u.Y = append(u.At, at), append(u.Y, s.GPUSeconds.Div(s.Capacity).InexactFloat64()*100)
		}
		sort.Strings(servers)
		var us []series
		for _, n := range servers {
			us = append(us, *util[n])
		}
		rv.Utilisation = lineChart("utilisation, % of each server's GPU-seconds sold", us, 720, 200)
	}
	return nil
}

// marketCapacity is each server's GPUs as the latest market data of its
// currency says (what the Market page shows), and when the latest of
// those was published; none without market data.
func (c *Console) marketCapacity() (map[string]int, time.Time) {
	out := map[string]int{}
	var at time.Time
	if c.cfg.Market == nil {
		return out, at
	}
	for _, s := range c.cfg.Market.snapshots() {
		if len(s) == 0 {
			continue
		}
		m := s[len(s)-1].Market
		for _, sv := range m.Servers {
			if sv.GPUs > 0 {
				out[sv.ID] = sv.GPUs
			}
		}
		if len(m.Servers) > 0 && m.At.After(at) {
			at = m.At
		}
	}
	return out, at
}

// capacityText writes servers' GPUs as the form takes them: "a=8,b=4".
func capacityText(capacity map[string]int) string {
	ids := make([]string, 0, len(capacity))
	for id := range capacity {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id + "=" + strconv.Itoa(capacity[id])
	}
	return strings.Join(parts, ",")
}

// everyWords says how long a trend's buckets are.
var everyWords = map[string]string{"month": "by month", "day": "by day", "6h": "every 6 hours", "1h": "by the hour", "10m": "every 10 minutes", "1m": "by the minute"}

// priceChart draws the average price of a GPU-hour over time, a line a
// currency, in the trend's buckets: finer than the report's periods
// where the market is younger than a few of them.
func priceChart(t breakdown.Trend) template.HTML {
	byCur := map[string]*series{}
	var names []string
	for _, p := range t.Points {
		s := byCur[p.Currency]
		if s == nil {
			s = &series{Name: p.Currency + " per GPU-hour"}
			byCur[p.Currency] = s
			names = append(names, p.Currency)
		}
		s.At, s.Y = append(s.At, p.At), append(s.Y, contract.PerHour(p.PerGPUSecond).InexactFloat64()) // drawn, not counted
	}
	var ss []series
	for _, n := range names {
		ss = append(ss, *byCur[n])
	}
	title := "average price of a GPU-hour"
	if w := everyWords[t.Every]; w != "" {
		title += ", " + w
	}
	return lineChartOr(title, "no contract ended in these days: no price to draw", ss, 720, 200)
}

// periodLayout parses a report's period names.
func periodLayout(by string) string {
	if by == string(breakdown.Month) {
		return "2006-01"
	}
	return "2006-01-02"
}
