package exchange

import (
	"context"
	"fmt"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// The checks of an offer's terms, the same whether the terms are offered
// (offer.go), quoted (quote.go) or offered again from the book
// (match.go).

// ownTerms is t sent by client in an offer or a quote (what): the terms'
// client is the sender, who may leave it out but not name another.
func ownTerms(t contract.Terms, client, what string) (contract.Terms, error) {
	if t.Client == "" {
		t.Client = client
	}
	if t.Client != client {
		return t, &bourse.Error{Code: bourse.EPermission, Field: "terms.client",
			Message: fmt.Sprintf("%s names client %q but was sent by %q", what, t.Client, client)}
	}
	return t, nil
}

// checkTerms is what terms must pass before a server hears of them:
// valid in themselves at their currency's scale (contract.Validate),
// their start neither past nor too far ahead.
func (h *House) checkTerms(ctx context.Context, t contract.Terms) error {
	if err := contract.Validate(t, h.scaleOf(ctx)); err != nil {
		return protocol.UnderTerms(err)
	}
	return h.checkStartAt(t.StartAt)
}

// bookingSkew is how far in the past an offer's start_at may be: the
// client's clock and the time its offer travels.
const bookingSkew = time.Minute

// checkStartAt refuses a start that has passed or is further ahead than
// Config.MaxBookAhead. A start just past starts at once.
func (h *House) checkStartAt(at time.Time) error {
	if at.IsZero() {
		return nil
	}
	now := h.cfg.Now()
	switch {
	case at.Before(now.Add(-bookingSkew)):
		return &bourse.Error{Code: bourse.EInvalidOffer, Field: "terms.start_at",
			Message: fmt.Sprintf("start %s has passed (it is %s)", at.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))}
	case at.After(now.Add(h.cfg.MaxBookAhead)):
		return &bourse.Error{Code: bourse.EInvalidOffer, Field: "terms.start_at",
			Message: fmt.Sprintf("start %s is more than %v ahead", at.UTC().Format(time.RFC3339), h.cfg.MaxBookAhead)}
	}
	return nil
}
