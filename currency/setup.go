package currency

import (
	"context"
	"fmt"

	"github.com/bourse/bourse"
)

// CreateCurrency adds c and its issuance account to s. Creating the same
// currency again is a no-op; the same code with another scale is EConflict.
func CreateCurrency(ctx context.Context, s Books, c Currency) error {
	if err := c.Validate(); err != nil {
		return err
	}
	old, found, err := s.Currency(ctx, c.Code)
	if err != nil {
		return fmt.Errorf("read currency %s: %w", c.Code, err)
	}
	if found {
		if old != c {
			return &bourse.Error{Code: bourse.EConflict, Op: "currency.CreateCurrency", Field: "scale",
				Message: fmt.Sprintf("currency %s exists with scale %d", c.Code, old.Scale)}
		}
		return nil
	}
	if err := s.PutCurrency(ctx, c); err != nil {
		return fmt.Errorf("create currency %s: %w", c.Code, err)
	}
	iss := Account{ID: IssuanceID(c.Code), Currency: c.Code, Kind: Issuance, Created: s.Now().UTC()}
	if err := s.PutAccount(ctx, iss); err != nil {
		return fmt.Errorf("create issuance account of %s: %w", c.Code, err)
	}
	return nil
}

// OpenAccount adds a wallet or revenue account to s and returns it. Opening
// the same account again returns the existing one; the same ID with other
// content is EConflict.
func OpenAccount(ctx context.Context, s Books, a Account) (Account, error) {
	const op = "currency.OpenAccount"
	if err := a.validate(op); err != nil {
		return Account{}, err
	}
	if a.Kind == Issuance || a.Kind == Escrow {
		return Account{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "kind",
			Message: string(a.Kind) + " accounts are opened by the ledger itself"}
	}
	if _, found, err := s.Currency(ctx, a.Currency); err != nil {
		return Account{}, fmt.Errorf("read currency %s: %w", a.Currency, err)
	} else if !found {
		return Account{}, &bourse.Error{Code: bourse.EUnknownCurrency, Op: op, Field: "currency", Message: "no currency " + quote(string(a.Currency))}
	}
	old, found, err := s.Account(ctx, a.ID)
	if err != nil {
		return Account{}, fmt.Errorf("read account %s: %w", a.ID, err)
	}
	if found {
		if !old.same(a) {
			return Account{}, &bourse.Error{Code: bourse.EConflict, Op: op, Field: "id",
				Message: fmt.Sprintf("account %s exists as a %s %s account", a.ID, old.Currency, old.Kind)}
		}
		return old, nil
	}
	if a.Parent != "" {
		p, found, err := s.Account(ctx, a.Parent)
		if err != nil {
			return Account{}, fmt.Errorf("read account %s: %w", a.Parent, err)
		}
		if !found || p.Kind != Wallet || p.Currency != a.Currency {
			return Account{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "parent",
				Message: "parent must be an existing " + string(a.Currency) + " wallet"}
		}
	}
	a.Created = s.Now().UTC()
	if err := s.PutAccount(ctx, a); err != nil {
		return Account{}, fmt.Errorf("create account %s: %w", a.ID, err)
	}
	return a, nil
}
