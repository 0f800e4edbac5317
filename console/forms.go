package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
)

// Every form names its fields as the command line's flags do; a field
// that does not parse is an invalid error naming it.

func field(r *http.Request, name string) (string, error) {
	v := strings.TrimSpace(r.PostForm.Get(name))
	if v == "" {
		return "", &bourse.Error{Code: bourse.EInvalid, Field: name, Message: name + " is required"}
	}
	return v, nil
}

func amountField(r *http.Request, name string) (decimal.Decimal, error) {
	v, err := field(r, name)
	if err != nil {
		return decimal.Decimal{}, err
	}
	d, err := decimal.NewFromString(v)
	if err != nil {
		return decimal.Decimal{}, &bourse.Error{Code: bourse.EInvalid, Field: name, Message: fmt.Sprintf("%q is not a number", v)}
	}
	return d, nil
}

// fields reads the named fields, stopping at the first missing one.
func fields(r *http.Request, names ...string) ([]string, error) {
	out := make([]string, len(names))
	for i, n := range names {
		v, err := field(r, n)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// moneyForm is a form that moves an amount into or out of a wallet.
func (c *Console) moneyForm(r *http.Request, move func(cur currency.Code, owner string, amount decimal.Decimal, key, memo string) error, done string) (string, error) {
	f, err := fields(r, "owner", "currency", "key")
	if err != nil {
		return "", err
	}
	amount, err := amountField(r, "amount")
	if err != nil {
		return "", err
	}
	if err := move(currency.Code(f[1]), f[0], amount, f[2], r.PostForm.Get("memo")); err != nil {
		return "", err
	}
	return fmt.Sprintf(done, amount, f[1], f[0]), nil
}

func (c *Console) grant(r *http.Request, actor string) (string, error) {
	return c.moneyForm(r, func(cur currency.Code, owner string, amount decimal.Decimal, key, memo string) error {
		_, err := c.cfg.Treasury.Grant(r.Context(), actor, cur, owner, amount, key, memo)
		return err
	}, "granted %s %s to %s")
}

func (c *Console) burn(r *http.Request, actor string) (string, error) {
	return c.moneyForm(r, func(cur currency.Code, owner string, amount decimal.Decimal, key, memo string) error {
		_, err := c.cfg.Treasury.Burn(r.Context(), actor, cur, owner, amount, key, memo)
		return err
	}, "burned %s %s of %s")
}

func (c *Console) open(r *http.Request, actor string) (string, error) {
	f, err := fields(r, "owner", "currency", "key")
	if err != nil {
		return "", err
	}
	parent := strings.TrimSpace(r.PostForm.Get("parent"))
	if _, err := c.cfg.Treasury.Open(r.Context(), actor, currency.Code(f[1]), f[0], parent, f[2]); err != nil {
		return "", err
	}
	return fmt.Sprintf("opened %s's wallet in %s", f[0], f[1]), nil
}

func (c *Console) setAllowance(r *http.Request, actor string) (string, error) {
	f, err := fields(r, "owner", "currency", "key")
	if err != nil {
		return "", err
	}
	a, err := amountField(r, "a")
	if err != nil {
		return "", err
	}
	b, err := amountField(r, "b")
	if err != nil {
		return "", err
	}
	period := time.Hour
	if p := strings.TrimSpace(r.PostForm.Get("period")); p != "" {
		if period, err = time.ParseDuration(p); err != nil {
			return "", &bourse.Error{Code: bourse.EInvalid, Field: "period", Message: fmt.Sprintf("%q is not a duration such as 1h or 30m", p)}
		}
	}
	rule := allowance.Rule{Wallet: currency.WalletID(currency.Code(f[1]), f[0]), A: a, B: b, Period: period, Start: c.cfg.Now().UTC().Truncate(time.Second)}
	if _, err := c.cfg.Treasury.SetAllowance(r.Context(), actor, rule, f[2]); err != nil {
		return "", err
	}
	return fmt.Sprintf("allowance of %s set: a = %s/h, b = %s/h", f[0], a, b), nil
}

func (c *Console) removeAllowance(r *http.Request, actor string) (string, error) {
	f, err := fields(r, "wallet", "key")
	if err != nil {
		return "", err
	}
	if _, err := c.cfg.Treasury.RemoveAllowance(r.Context(), actor, currency.AccountID(f[0]), f[1]); err != nil {
		return "", err
	}
	return "allowance of " + f[0] + " removed", nil
}

func (c *Console) setCap(r *http.Request, actor string) (string, error) {
	f, err := fields(r, "client", "gpus", "key")
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 0 {
		return "", &bourse.Error{Code: bourse.EInvalid, Field: "gpus", Message: fmt.Sprintf("%q is not a whole number of GPUs", f[1])}
	}
	if _, err := c.cfg.Treasury.SetCap(r.Context(), actor, f[0], n, f[2]); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s may hold %d GPUs at once", f[0], n), nil
}

func (c *Console) setSpendCap(r *http.Request, actor string) (string, error) {
	f, err := fields(r, "owner", "currency", "period", "key")
	if err != nil {
		return "", err
	}
	limit, err := amountField(r, "limit")
	if err != nil {
		return "", err
	}
	warn, err := amountField(r, "warn")
	if err != nil {
		return "", err
	}
	if _, err := c.cfg.Treasury.SetSpendCap(r.Context(), actor, f[0], currency.Code(f[1]), caps.Period(f[2]), limit, warn, f[3]); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s spend cap of %s: %s %s", f[2], f[0], limit, f[1]), nil
}

func (c *Console) setRate(r *http.Request, actor string) (string, error) {
	f, err := fields(r, "from", "to", "key")
	if err != nil {
		return "", err
	}
	rate, err := amountField(r, "rate")
	if err != nil {
		return "", err
	}
	if _, err := c.cfg.Treasury.SetRate(r.Context(), actor, currency.Code(f[0]), currency.Code(f[1]), rate, f[2]); err != nil {
		return "", err
	}
	return fmt.Sprintf("rate %s/%s set to %s", f[0], f[1], rate), nil
}

func (c *Console) exchange(r *http.Request, actor string) (string, error) {
	f, err := fields(r, "owner", "from", "to", "key")
	if err != nil {
		return "", err
	}
	amount, err := amountField(r, "amount")
	if err != nil {
		return "", err
	}
	a, err := c.cfg.Treasury.Convert(r.Context(), actor, f[0], currency.Code(f[1]), currency.Code(f[2]), amount, f[3])
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("exchanged %s %s of %s into %s at %s", amount, f[1], f[0], f[2], a.After["rate"]), nil
}

func (c *Console) setSpendRate(r *http.Request, actor string) (string, error) {
	f, err := fields(r, "owner", "currency", "key")
	if err != nil {
		return "", err
	}
	capacity, err := amountField(r, "capacity")
	if err != nil {
		return "", err
	}
	perHour, err := amountField(r, "per_hour")
	if err != nil {
		return "", err
	}
	warn, err := amountField(r, "warn")
	if err != nil {
		return "", err
	}
	if _, err := c.cfg.Treasury.SetSpendRate(r.Context(), actor, f[0], currency.Code(f[1]), capacity, perHour, warn, f[2]); err != nil {
		return "", err
	}
	return fmt.Sprintf("spend rate of %s: %s %s, refilled at %s an hour", f[0], capacity, f[1], perHour), nil
}

func (c *Console) setPrice(r *http.Request, actor string) (string, error) {
	f, err := fields(r, "sold", "paid_in", "key")
	if err != nil {
		return "", err
	}
	price, err := amountField(r, "price")
	if err != nil {
		return "", err
	}
	if _, err := c.cfg.Treasury.SetPrice(r.Context(), actor, currency.Code(f[0]), currency.Code(f[1]), price, f[2]); err != nil {
		return "", err
	}
	if price.IsZero() {
		return fmt.Sprintf("%s is no longer sold for %s", f[0], f[1]), nil
	}
	return fmt.Sprintf("%s sold at %s %s", f[0], price, f[1]), nil
}

func (c *Console) sell(r *http.Request, actor string) (string, error) {
	f, err := fields(r, "buyer", "sold", "paid_in", "key")
	if err != nil {
		return "", err
	}
	amount, err := amountField(r, "amount")
	if err != nil {
		return "", err
	}
	a, err := c.cfg.Treasury.Sell(r.Context(), actor, f[0], currency.Code(f[1]), currency.Code(f[2]), amount, f[3])
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("sold %s %s to %s at %s %s: paid %s %s", amount, f[1], f[0], a.After["price"], f[2], a.After["cost"], f[2]), nil
}
