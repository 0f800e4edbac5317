package console

import (
	"crypto/hmac"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// A grant mints money and a burn destroys it: a slip of the keyboard
// (a zero too many, the wrong owner) changes the money supply. So the
// form's first POST only shows what would happen, balances before and
// after, and the action is taken by a second POST that carries a
// confirmation token: a MAC, under the console's secret, of the session's
// CSRF token and of every field of the action. The server holds to it,
// not a script in the page: a POST without the token (a forged one, or
// a script's) is shown the confirmation and changes nothing, and a token
// for other values (confirm 1, then send 1000) is refused.

// confirmFields are the fields a confirmation token covers: all that
// makes the action what it is, its idempotency key included.
var confirmFields = []string{"form", "key", "back", "owner", "currency", "amount", "memo"}

// refusedConfirmation answers a token that does not match the form.
const refusedConfirmation = "this confirmation is not for what was sent: go back and confirm again"

// preview reads a money form and says what it would do, or why it cannot.
type preview func(r *http.Request) (confirmView, error)

type confirmView struct {
	// Question is what is asked ("Mint 40.00 CRED into alice's wallet?"),
	// Button the button's word.
	Question, Button string
	Action           string
	Owner, Currency  string
	// Wallet and Supply are the balances now and after.
	WalletNow, WalletAfter, SupplyNow, SupplyAfter string
	Memo                                           string
	Fields                                         []hiddenField
	Token, Back                                    string
}

type hiddenField struct{ Name, Value string }

// confirmed runs f only for a POST with a valid confirmation token;
// without one it shows the confirmation.
func (c *Console) confirmed(p preview, f form) func(http.ResponseWriter, *http.Request, Session) {
	submit := c.submit(f)
	return func(w http.ResponseWriter, r *http.Request, s Session) {
		for _, n := range confirmFields {
			r.PostForm.Set(n, plain(n, r.PostForm.Get(n)))
		}
		token := r.PostForm.Get("confirm")
		if token == "" {
			cv, err := p(r)
			if err != nil {
				c.comeBack(w, r, s, cloneValues(r.PostForm), err)
				return
			}
			cv.Action, cv.Back, cv.Token = r.URL.Path, localPath(r.PostForm.Get("back")), c.confirmToken(s, r)
			for _, n := range confirmFields {
				cv.Fields = append(cv.Fields, hiddenField{n, r.PostForm.Get(n)})
			}
			c.render(w, r, s, func(_ *http.Request, v *view) error {
				v.Page, v.Title, v.Data = "confirm", "Confirm: "+cv.Button, cv
				if u, err := url.Parse(cv.Back); err == nil {
					v.Path = u.Path
				}
				return nil
			}, nil, http.StatusOK)
			return
		}
		if !hmac.Equal([]byte(token), []byte(c.confirmToken(s, r))) {
			c.cfg.Logger.Warn("console confirmation refused", "user", s.User, "path", r.URL.Path)
			http.Error(w, refusedConfirmation, http.StatusForbidden)
			return
		}
		submit(w, r, s)
	}
}

// plain is a field's value as the confirmation page carries it and the
// action is taken with: a value survives the page unchanged only without
// control characters (html/template writes NUL as U+FFFD, HTML reads
// CR LF as LF) and in UTF-8, and back only as a path of the console's.
// Both POSTs read their fields through it, so that what is done is what
// was shown, and the token matches after the round trip.
func plain(name, v string) string {
	if name == "back" {
		return localPath(v)
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(v, "\uFFFD"))
}

// confirmToken is the token that confirms r's action in session s.
func (c *Console) confirmToken(s Session, r *http.Request) string {
	v := url.Values{}
	for _, n := range confirmFields {
		v.Set(n, r.PostForm.Get(n))
	}
	return sign(c.cfg.Secret, "confirm|"+s.CSRF+"|"+r.URL.Path+"|"+v.Encode())
}

// previewGrant and previewBurn check a grant's or burn's fields as the
// treasury will (the currency, the amount and its places, the wallet,
// and for a burn the money in it) and say what it would change.
func (c *Console) previewGrant(r *http.Request) (confirmView, error) { return c.previewMoney(r, false) }
func (c *Console) previewBurn(r *http.Request) (confirmView, error)  { return c.previewMoney(r, true) }

func (c *Console) previewMoney(r *http.Request, burn bool) (confirmView, error) {
	ctx := r.Context()
	l := c.cfg.Treasury.Ledger()
	f, err := fields(r, "owner", "currency", "key")
	if err != nil {
		return confirmView{}, err
	}
	amount, err := amountField(r, "amount")
	if err != nil {
		return confirmView{}, err
	}
	owner, code := f[0], currency.Code(f[1])
	cur, err := l.Currency(ctx, code)
	if err != nil {
		return confirmView{}, fmt.Errorf("currency %s: %w", code, err)
	}
	if err := cur.CheckAmount("amount", amount); err != nil {
		return confirmView{}, err
	}
	wallet, err := l.Balance(ctx, currency.WalletID(code, owner))
	if bourse.ErrorCode(err) == bourse.ENotFound {
		return confirmView{}, &bourse.Error{Code: bourse.ENotFound, Field: "owner", Message: fmt.Sprintf("%s has no %s wallet: open one first", owner, code), Err: err}
	}
	if err != nil {
		return confirmView{}, err
	}
	iss, err := l.Balance(ctx, currency.IssuanceID(code))
	if err != nil {
		return confirmView{}, err
	}
	supply, change := iss.Available.Neg(), amount
	cv := confirmView{Owner: owner, Currency: string(code), Memo: r.PostForm.Get("memo"),
		Question: fmt.Sprintf("Mint %s %s into %s's wallet?", currency.Format(amount, cur.Scale), code, owner), Button: "Grant"}
	if burn {
		if wallet.Available.LessThan(amount) {
			return confirmView{}, &bourse.Error{Code: bourse.EInsufficientFunds, Field: "amount",
				Message: fmt.Sprintf("%s has %s %s available: a burn of %s would leave less than nothing", owner, currency.Format(wallet.Available, cur.Scale), code, amount)}
		}
		change = amount.Neg()
		cv.Question, cv.Button = fmt.Sprintf("Destroy %s %s from %s's wallet?", currency.Format(amount, cur.Scale), code, owner), "Burn"
	}
	cv.WalletNow, cv.WalletAfter = currency.Format(wallet.Available, cur.Scale), currency.Format(wallet.Available.Add(change), cur.Scale)
	cv.SupplyNow, cv.SupplyAfter = currency.Format(supply, cur.Scale), currency.Format(supply.Add(change), cur.Scale)
	return cv, nil
}
