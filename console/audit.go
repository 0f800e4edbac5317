package console

import (
	"net/http"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/treasury"
)

// auditPage is how many actions a page of the trail shows.
const auditPage = 50

type auditView struct {
	Actions []auditRow
	Older   string
}

// auditRow is an action with what it changed, in words.
type auditRow struct {
	treasury.Action
	Changed string
}

func (c *Console) audit(r *http.Request, v *view) error {
	v.Page, v.Title = "audit", "Audit trail"
	acts, err := c.cfg.Treasury.Actions(r.Context(), r.URL.Query().Get("before"), auditPage)
	if err != nil {
		return err
	}
	scales, err := c.scales(r)
	if err != nil {
		return err
	}
	var av auditView
	for _, a := range acts {
		av.Actions = append(av.Actions, auditRow{Action: a, Changed: changed(a, scales)})
	}
	if len(acts) == auditPage {
		av.Older = acts[len(acts)-1].Key
	}
	v.Data = av
	return nil
}

// scales are every currency's places, by code.
func (c *Console) scales(r *http.Request) (map[currency.Code]int32, error) {
	cs, err := c.cfg.Treasury.Ledger().Currencies(r.Context())
	if err != nil {
		return nil, err
	}
	out := make(map[currency.Code]int32, len(cs))
	for _, cur := range cs {
		out[cur.Code] = cur.Scale
	}
	return out, nil
}
