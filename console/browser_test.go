package console

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/treasury"
)

// chrome finds a Chromium to drive: $BOURSE_CHROME, else one on PATH
// (scripts/chromium.sh installs Debian's). Without one the browser test
// skips, except in CI, where it must run.
func chrome(t *testing.T) string {
	if p := os.Getenv("BOURSE_CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium found: in CI the console's browser test must run (scripts/chromium.sh installs Debian's chromium)")
	}
	t.Skip("no Chromium found (apt-get install chromium, or set BOURSE_CHROME)")
	return ""
}

// browse starts a headless Chromium for t.
func browse(t *testing.T) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome(t)), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	return ctx
}

// do runs steps in the browser, in order.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...), what)
}

// get runs one action and returns its value.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	require.NoError(t, err, what)
	return v
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// logIn logs in on the login page the browser is at.
func logIn(user string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.WaitVisible(css("#user")),
		chromedp.SendKeys(css("#user"), user),
		chromedp.SendKeys(css("#password"), user+"-password"),
		chromedp.Click(css("#login")),
		chromedp.WaitVisible(css("#who")),
	}
}

// TestBrowser drives the console in Chromium as an administrator would:
// log in, grant, see the balance and its chart change, set an allowance
// and see its preview, find oneself in the audit trail; then as a viewer,
// who sees no forms and whose POST is refused.
func TestBrowser(t *testing.T) {
	srv, tr, _ := testConsole(t)
	ctx := browse(t)
	alice := css(`[id="w-wallet/CRED/alice"] .avail`)

	do(t, ctx, "log in as ann", append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(srv.URL + "/")}, logIn("ann")...)...)
	assert.Equal(t, "ann (admin)", get(t, ctx, "who", chromedp.Text(css("#who"))))
	assert.Equal(t, "0.00", get(t, ctx, "alice's balance", chromedp.Text(alice)))

	ledgerBalance := func() string {
		t.Helper()
		b, err := tr.Ledger().Balance(context.Background(), "wallet/CRED/alice")
		require.NoError(t, err)
		return b.Available.String()
	}
	// fill fills the grant or burn form for alice and sends it, then
	// waits for what answers.
	fill := func(form, amount, answer string) []chromedp.Action[chromedp.Void] {
		return []chromedp.Action[chromedp.Void]{
			chromedp.Navigate(srv.URL + "/"),
			chromedp.WaitVisible(css("#" + form + "-form")),
			chromedp.SendKeys(css("#"+form+"-owner"), "alice"),
			chromedp.SendKeys(css("#"+form+"-currency"), "CRED"),
			chromedp.SendKeys(css("#"+form+"-amount"), amount),
			chromedp.Click(css("#" + form + "-submit")),
			chromedp.WaitVisible(css(answer)),
		}
	}
	grant := func(amount string) {
		t.Helper()
		before := ledgerBalance()
		do(t, ctx, "grant "+amount, fill("grant", amount, "#confirm-form")...)
		assert.Contains(t, get(t, ctx, "the question", chromedp.Text(css("#confirm-question"))), "Mint ")
		assert.Equal(t, before, ledgerBalance(), "nothing minted before it is confirmed")
		do(t, ctx, "confirm the grant of "+amount, chromedp.Click(css("#confirm-submit")), chromedp.WaitVisible(css("#done")))
	}
	points := func() string {
		t.Helper()
		do(t, ctx, "alice's account", chromedp.Navigate(srv.URL+"/account?id=wallet/CRED/alice"), chromedp.WaitVisible(css("#available")))
		return get(t, ctx, "alice's balance chart", chromedp.AttributeValue(css("svg.chart polyline"), "points")).Value
	}
	grant("40")
	do(t, ctx, "back to the balances", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(alice))
	assert.Equal(t, "40.00", get(t, ctx, "alice's balance", chromedp.Text(alice)))
	do(t, ctx, "alice's account", chromedp.Navigate(srv.URL+"/account?id=wallet/CRED/alice"), chromedp.WaitVisible(css("#available")))
	chart1 := get(t, ctx, "alice's balance chart", chromedp.TextContent(css("svg.chart .empty")))
	assert.Contains(t, chart1, "one moment only, no line to draw: wallet/CRED/alice 40 at", "one grant is no line")
	grant("2.50")
	assert.Equal(t, "granted 2.5 CRED to alice", get(t, ctx, "what was done", chromedp.Text(css("#done"))))
	assert.Equal(t, "42.50", get(t, ctx, "alice's balance", chromedp.Text(alice)))
	chart2 := points()
	assert.NotEqual(t, chart1, chart2, "the chart changed")
	assert.Len(t, strings.Fields(chart2), 2, "two grants, two points")

	do(t, ctx, "set an allowance",
		chromedp.Navigate(srv.URL+"/allowances"),
		chromedp.WaitVisible(css("#allowance-form")),
		chromedp.SendKeys(css("#allowance-owner"), "alice"),
		chromedp.SendKeys(css("#allowance-currency"), "CRED"),
		chromedp.SendKeys(css("#allowance-a"), "10"),
		chromedp.SendKeys(css("#allowance-b"), "0.1"),
		chromedp.Click(css("#allowance-submit")),
		chromedp.WaitVisible(css("#done")))
	assert.Equal(t, "100.00", get(t, ctx, "the steady state", chromedp.Text(css(`[id="a-wallet/CRED/alice"] .steady`))), "a/b")
	assert.NotEmpty(t, get(t, ctx, "the preview", chromedp.AttributeValue(css(`[id="a-wallet/CRED/alice"] svg.chart polyline`), "points")).Value)
	rules, err := tr.Allowances(context.Background())
	require.NoError(t, err)
	require.Len(t, rules, 1)

	do(t, ctx, "a bad amount comes back with its error", fill("grant", "lots", "#form-error")...)
	assert.Contains(t, get(t, ctx, "the error", chromedp.Text(css("#form-error"))), `invalid (amount): "lots" is not a number`)
	assert.Equal(t, "lots", get(t, ctx, "the amount typed", chromedp.AttributeValue(css("#grant-amount"), "value")).Value, "nothing typed is lost")

	do(t, ctx, "the audit trail", chromedp.Navigate(srv.URL+"/audit"), chromedp.WaitVisible(css("#trail")))
	assert.Equal(t, "ann", get(t, ctx, "the last actor", chromedp.Text(css("#trail tr:nth-child(2) .actor"))))

	// A burn asks too, and Cancel leaves everything as it was.
	do(t, ctx, "a burn, cancelled", fill("burn", "2.5", "#confirm-form")...)
	assert.Equal(t, "Destroy 2.50 CRED from alice's wallet?", get(t, ctx, "the question", chromedp.Text(css("#confirm-question"))))
	assert.Equal(t, "40.00", get(t, ctx, "the balance after", chromedp.Text(css("#confirm-wallet"))))
	do(t, ctx, "cancel", chromedp.Click(css("#confirm-cancel")), chromedp.WaitVisible(alice))
	assert.Equal(t, "42.50", get(t, ctx, "alice's balance", chromedp.Text(alice)), "nothing burned")

	// The server holds to the confirmation: the session's own POST
	// without it only shows the question, and one with a made-up token is
	// refused.
	csrf := get(t, ctx, "the session's CSRF token", chromedp.AttributeValue(css(`input[name="csrf"]`), "value")).Value
	forged := url.Values{"csrf": {csrf}, "key": {"forged-1"}, "back": {"/"}, "form": {"grant"}, "owner": {"alice"}, "currency": {"CRED"}, "amount": {"1000"}}
	code, body := postAs(t, ctx, srv.URL+"/grant", forged)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `id="confirm-form"`, "a grant without confirmation is asked about")
	forged.Set("confirm", "forged")
	code, _ = postAs(t, ctx, srv.URL+"/grant", forged)
	assert.Equal(t, http.StatusForbidden, code, "a made-up confirmation is refused")
	assert.Equal(t, "42.5", ledgerBalance(), "the forged grants minted nothing")

	do(t, ctx, "log out, and in as vic, a viewer", append([]chromedp.Action[chromedp.Void]{chromedp.Click(css("header form button"))}, logIn("vic")...)...)
	assert.Equal(t, "vic (viewer)", get(t, ctx, "who", chromedp.Text(css("#who"))))
	assert.Zero(t, get(t, ctx, "forms", chromedp.Evaluate[int](`document.querySelectorAll("form.action").length`)), "a viewer sees no forms")
	csrf = get(t, ctx, "the session's CSRF token", chromedp.AttributeValue(css(`input[name="csrf"]`), "value")).Value
	// The viewer's own session, sending a well-formed grant anyway.
	code, _ = postAs(t, ctx, srv.URL+"/grant", url.Values{"csrf": {csrf}, "key": {"vic-1"}, "owner": {"alice"}, "currency": {"CRED"}, "amount": {"1000"}})
	assert.Equal(t, http.StatusForbidden, code)
	bal, err := tr.Ledger().Balance(context.Background(), "wallet/CRED/alice")
	require.NoError(t, err)
	assert.True(t, bal.Available.Equal(decimal.RequireFromString("42.5")), "the viewer moved nothing: %s", bal.Available)
}

// postAs posts form to u with the browser's cookies, as a script in
// another tab of it could: what the server does, not what the page lets
// one do.
func postAs(t *testing.T, ctx context.Context, u string, form url.Values) (int, string) {
	t.Helper()
	cookies := get(t, ctx, "the cookies", chromedp.Action[network.GetCookiesResult](func(ctx context.Context, t *chromedp.Target) (network.GetCookiesResult, error) {
		return cdp.Call(ctx, t, network.GetCookies, network.GetCookiesParams{})
	}))
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", req.URL.Scheme+"://"+req.URL.Host)
	for _, c := range cookies.Cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestScreenshots draws the main pages of a small market into
// $BOURSE_CONSOLE_SHOTS (docs/console/ has them): make console-shots.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("BOURSE_CONSOLE_SHOTS")
	if dir == "" {
		t.Skip("BOURSE_CONSOLE_SHOTS is not set (make console-shots)")
	}
	cfg, tr, store := testConfig(t)
	cfg.Market = furnishMarket()
	srv, _ := serve(t, cfg)
	furnish(t, tr, store)
	ctx := browse(t)
	do(t, ctx, "log in", append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(srv.URL + "/login")}, logIn("ann")...)...)
	for name, path := range map[string]string{
		"balances": "/", "supply": "/supply", "allowances": "/allowances", "caps": "/caps",
		"rates": "/rates", "report": "/report?from=2026-11-20&to=2026-11-26&capacity=atlas%3D8%2Cboreal%3D4%2Ccirrus%3D4", "audit": "/audit", "account": "/account?id=wallet/CRED/alice",
		"contracts": "/contracts?from=2026-11-20&to=2026-11-26", "market": "/market",
		"contract": "/contract?id=k30", "contract-settled": "/contract?id=k31",
	} {
		do(t, ctx, name, chromedp.Navigate(srv.URL+path), chromedp.WaitVisible(css("main")))
		png := get(t, ctx, name, chromedp.FullScreenshot(100))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
	}
}

// furnish gives the screenshot market its history: an organisation with
// two projects, grants and a burn, an allowance, caps, a rate and an
// exchange, a price and a sale, and a week of contracts.
func furnish(t *testing.T, tr *treasury.Treasury, store *memstore.Store) {
	ctx := context.Background()
	l := tr.Ledger()
	d := decimal.RequireFromString
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPUH", Scale: 0}))
	must := func(_ treasury.Action, err error) { t.Helper(); require.NoError(t, err) }
	must(tr.Open(ctx, "ann", "CRED", "acme.ml", "acme", "o1"))
	must(tr.Open(ctx, "ann", "CRED", "acme.vision", "acme", "o2"))
	must(tr.Open(ctx, "ann", "CRED", "bob", "acme.vision", "o3"))
	must(tr.Open(ctx, "ann", "CRED", "carl", "", "o4"))
	for i, g := range []struct{ owner, amount string }{{"acme", "5000"}, {"alice", "800"}, {"bob", "650"}, {"carl", "120"}, {"acme.ml", "1500"}} {
		must(tr.Grant(ctx, "ann", "CRED", g.owner, d(g.amount), fmt.Sprint("g", i), "November budget"))
	}
	must(tr.Burn(ctx, "bea", "CRED", "carl", d("20"), "b1", "returned"))
	must(tr.SetAllowance(ctx, "ann", allowance.Rule{Wallet: "wallet/CRED/carl", A: d("10"), B: d("0.1"), Period: time.Hour, Start: time.Now().Add(-48 * time.Hour)}, "a1"))
	must(tr.SetCap(ctx, "ann", "alice", 8, "c1"))
	must(tr.SetCap(ctx, "ann", "bob", 4, "c2"))
	must(tr.SetSpendCap(ctx, "ann", "acme.ml", "CRED", caps.Month, d("2000"), d("0.8"), "s1"))
	must(tr.SetSpendCap(ctx, "ann", "alice", "CRED", caps.Day, d("150"), d("0.8"), "s2"))
	must(tr.SetSpendRate(ctx, "ann", "bob", "CRED", d("60"), d("20"), d("0.8"), "sr1"))
	must(tr.SetRate(ctx, "bea", "CRED", "GPUH", d("0.25"), "r1"))
	must(tr.Convert(ctx, "ann", "alice", "CRED", "GPUH", d("40"), "x1"))
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "EUR", Scale: 2}))
	must(tr.Open(ctx, "ann", "EUR", "acme", "", "o5"))
	must(tr.Open(ctx, "ann", "EUR", "acme.vision", "acme", "o6"))
	must(tr.Open(ctx, "ann", "EUR", "bob", "acme.vision", "o7"))
	must(tr.Grant(ctx, "bea", "EUR", "bob", d("200"), "eur1", "bank transfer 2026-11-19"))
	must(tr.SetPrice(ctx, "bea", "CRED", "EUR", d("0.10"), "p1"))
	must(tr.Sell(ctx, "ann", "bob", "CRED", "EUR", d("500"), "sale1"))
	_, err := currency.Do(ctx, l, currency.Reserve{Key: "hold", Hold: "gpus/k1", From: caps.GPUWallet("alice"), Amount: d("6"), Deadline: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	day := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	for i := range 30 {
		client := []string{"alice", "bob", "carl"}[i%3]
		model := []string{"H100", "A100", "L4"}[i%3]
		class := contract.Class{Model: model}
		if model == "H100" {
			class = contract.Class{} // any model asked; its server sold an H100
		}
		k := contract.Contract{ID: fmt.Sprint("k", i), Client: client, Server: []string{"atlas", "boreal", "cirrus"}[i%3], State: contract.StateAccepted,
			AcceptedAt: day.Add(time.Duration(i) * 4 * time.Hour), Terms: contract.Terms{Client: client, Currency: "CRED", GPUs: 1, Class: class, Prepayment: d("20")}}
		_, _, err := store.Open(ctx, k, "")
		require.NoError(t, err)
		_, err = store.Update(ctx, k.ID, func(c *contract.Contract) ([]currency.Op, error) {
			c.State, c.Charge = contract.StateSettled, d(fmt.Sprintf("%d.%02d", 3+i%7, (i*37)%100))
			c.Refund = c.Terms.Prepayment.Sub(c.Charge)
			c.Reading = &contract.Reading{Contract: c.ID, U: d(fmt.Sprint(600 + 90*(i%5))), T: contract.Duration(20 * time.Minute), S: d("1")}
			c.Model, c.Meter = model, contract.MeterNVML
			c.StartedAt, c.SettledAt = c.AcceptedAt, c.AcceptedAt.Add(20*time.Minute)
			return nil, nil
		})
		require.NoError(t, err)
	}
	// k30 runs a program on a server with no GPU meter: charged as if
	// both GPUs were busy, and what is due so far; k31 ran an image and
	// exited 3.
	now := time.Now().UTC()
	job := &contract.JobSpec{Command: "/usr/bin/python3", Args: []string{"train.py", "--epochs", "3"}}
	k := contract.Contract{ID: "k30", Client: "alice", Server: "atlas", State: contract.StateAccepted, AcceptedAt: now.Add(-10 * time.Minute), StartDeadline: now,
		Terms: contract.Terms{Client: "alice", Currency: "CRED", GPUs: 2, TimeLimit: time.Hour, P: contract.Flat(d("0.0012")), Prepayment: d("8.64"), Job: job}}
	_, _, err = store.Open(ctx, k, "")
	require.NoError(t, err)
	_, err = store.Update(ctx, "k30", func(c *contract.Contract) ([]currency.Op, error) {
		c.Start(contract.Began{At: now.Add(-9 * time.Minute), GPUs: []int{2, 3}, Meter: contract.MeterFullUse, Model: "H100"}, now)
		c.Reading = &contract.Reading{Contract: c.ID, Seq: 540, U: d("1080"), T: contract.Duration(9 * time.Minute), S: d("2"), At: now}
		return nil, nil
	})
	require.NoError(t, err)
	three := 3
	k = contract.Contract{ID: "k31", Client: "bob", Server: "boreal", State: contract.StateAccepted, AcceptedAt: now.Add(-30 * time.Minute), StartDeadline: now,
		Terms: contract.Terms{Client: "bob", Currency: "CRED", GPUs: 1, Class: contract.Class{Model: "A100"}, TimeLimit: time.Hour, P: contract.Flat(d("0.0008")), Prepayment: d("2.88"),
			Job: &contract.JobSpec{Image: "ghcr.io/acme/train:v1", Args: []string{"--epochs=3"}}}}
	_, _, err = store.Open(ctx, k, "")
	require.NoError(t, err)
	_, err = store.Update(ctx, "k31", func(c *contract.Contract) ([]currency.Op, error) {
		c.Start(contract.Began{At: now.Add(-29 * time.Minute), GPUs: []int{0}, Meter: contract.MeterNVML, Model: "A100", Image: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}, now)
		c.Reading = &contract.Reading{Contract: c.ID, Seq: 120, U: d("1500"), T: contract.Duration(20 * time.Minute), S: d("1"), At: now, Final: true, ExitCode: &three}
		c.State, c.Reason, c.Charge, c.SettledAt = contract.StateSettled, contract.ReasonCompleted, d("1.20"), now
		c.Refund = c.Terms.Prepayment.Sub(c.Charge)
		return nil, nil
	})
	require.NoError(t, err)
}

// a100Book is furnishMarket's A100 book: three GPUs free on servers
// asking, at two levels, and offers waiting at three.
func a100Book() *protocol.Book {
	d := decimal.RequireFromString
	p := func(s string) *decimal.Decimal { v := d(s); return &v }
	return &protocol.Book{
		Asks:    []protocol.Level{{Price: d("0.00078"), GPUs: 1, Orders: 1}, {Price: d("0.00081"), GPUs: 2, Orders: 1}},
		Bids:    []protocol.Level{{Price: d("0.00071"), GPUs: 2, Orders: 1}, {Price: d("0.00069"), GPUs: 4, Orders: 2}, {Price: d("0.00062"), GPUs: 6, Orders: 3}},
		AskGPUs: 3, BidGPUs: 12, BestAsk: p("0.00078"), BestBid: p("0.00071"), Spread: p("0.00007"), Mid: p("0.000745")}
}

// furnishMarket is ten minutes of a market's data, a publication every
// 5 seconds: H100s and A100s traded at prices that wander, and their
// GPUs filling up and freeing.
func furnishMarket() *MarketHistory {
	d := decimal.RequireFromString
	h := NewMarketHistory(0, nil)
	end := time.Now()
	wave := func(i int, period, mid, amp float64) decimal.Decimal {
		return decimal.NewFromFloat(mid + amp*math.Sin(2*math.Pi*float64(i)/period)).Round(6)
	}
	for i := range 120 {
		at := end.Add(time.Duration(i-119) * 5 * time.Second)
		m := marketAt(at, 2+i/10%6, "H100")
		h100 := &m.Models[0]
		h100.Settled, h100.Used = 20+i/4, decimal.NewFromInt(int64(7200+90*i))
		h100.Prices = &protocol.Prices{Low: wave(i, 90, 0.00115, 0.0001), Median: wave(i, 60, 0.00140, 0.00008), High: wave(i, 45, 0.00175, 0.0001),
			VWAP: wave(i+8, 60, 0.00137, 0.00007)}
		m.Models = append(m.Models[:1], protocol.MarketModel{Model: "A100", Settled: 9 + i/8, Used: d(fmt.Sprint(3600 + 60*i)), Charged: d(fmt.Sprint(3 + i)), GPUs: 16, Free: 12 - i/12,
			Prices: &protocol.Prices{Low: d("0.0006"), Median: wave(i, 120, 0.00074, 0.00004), High: d("0.0009"), VWAP: wave(i+15, 120, 0.00073, 0.00005)},
			Book:   a100Book()}, m.Models[1])
		h.Add(m)
	}
	return h
}

// TestBrowserMarket: the Market page in Chromium shows a viewer the
// market data and its charts, and reloads itself to show the next
// publication.
func TestBrowserMarket(t *testing.T) {
	cfg, _, _ := testConfig(t)
	cfg.Refresh = time.Second
	cfg.Market = NewMarketHistory(0, nil)
	srv, _ := serve(t, cfg)
	now := time.Now()
	cfg.Market.Add(marketAt(now.Add(-10*time.Second), 6, "H100"))
	cfg.Market.Add(marketAt(now.Add(-5*time.Second), 5, "H100"))
	ctx := browse(t)
	free := css(`#market-CRED tr:nth-child(2) .free`)
	do(t, ctx, "log in as vic, to the Market page", append(append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(srv.URL + "/market")}, logIn("vic")...),
		chromedp.WaitVisible(free))...)
	assert.Equal(t, "5", get(t, ctx, "H100s free", chromedp.Text(free)))
	assert.Equal(t, 1, get(t, ctx, "the price band", chromedp.Evaluate[int](`document.querySelectorAll("#market-CRED svg.chart polygon.band").length`)))
	cfg.Market.Add(marketAt(now, 2, "H100"))
	var got string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && got != "2"; time.Sleep(100 * time.Millisecond) {
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		if text, err := chromedp.Run(tctx, chromedp.Text(free)); err == nil { // a read while the page reloads may fail
			got = text
		}
		cancel()
	}
	assert.Equal(t, "2", got, "the page reloaded itself")
}

// TestBrowserThrottleFlood: ann has logged in from this browser before;
// then someone on her own address guesses her password and floods the
// login with ten thousand junk names. Every junk login is refused, her
// name stays throttled for the guesser and for a browser she never used,
// and she logs in from hers.
func TestBrowserThrottleFlood(t *testing.T) {
	cfg, _, _ := testConfig(t)
	srv, c := serve(t, cfg)
	// The buckets refill one login every 12 s: a flood slower than that
	// (a loaded machine) would see junk names let through. The throttle's
	// clock stands still here; cookies keep the real one.
	stopped := time.Now()
	c.throttle.clock = func() time.Time { return stopped }
	ctx := browse(t)
	do(t, ctx, "log in as ann, and out", append(append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(srv.URL + "/")}, logIn("ann")...),
		chromedp.Click(css("header form button")), chromedp.WaitVisible(css("#login")))...)

	guess := func(user string) int {
		resp, err := http.PostForm(srv.URL+"/login", url.Values{"user": {user}, "password": {"guess"}})
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	guesses := 0
	for guess("ann") == http.StatusUnauthorized {
		guesses++
	}
	assert.Equal(t, 4, guesses, "five at once, and ann's own login was one")
	start := time.Now()
	for i := range 10000 {
		require.Equal(t, http.StatusTooManyRequests, guess(fmt.Sprintf("junk%05d", i)), "junk name %d", i)
	}
	t.Logf("10,000 junk logins refused in %v", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, http.StatusTooManyRequests, guess("ann"), "the guesser is still throttled on ann")

	do(t, ctx, "ann logs in from her browser", append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(srv.URL + "/")}, logIn("ann")...)...)
	assert.Equal(t, "ann (admin)", get(t, ctx, "who", chromedp.Text(css("#who"))))

	do(t, ctx, "a browser that never logged in as ann",
		chromedp.Action[chromedp.Void](func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := cdp.Call(ctx, t, network.ClearBrowserCookies, cdp.Empty{})
			return chromedp.Void{}, err
		}),
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(css("#user")),
		chromedp.SendKeys(css("#user"), "ann"),
		chromedp.SendKeys(css("#password"), "ann-password"),
		chromedp.Click(css("#login")),
		chromedp.WaitVisible(css("p.error")))
	assert.Contains(t, get(t, ctx, "the refusal", chromedp.Text(css("p.error"))), "too many logins")
}

// TestBrowserLogoutRevokes: the session cookie copied out of Chromium
// works until ann logs out there; after it the copy can neither read nor
// grant. Then, logged in again, she ends all sessions from the Sessions
// page, and is sent to log in.
func TestBrowserLogoutRevokes(t *testing.T) {
	srv, tr, _ := testConsole(t)
	ctx := browse(t)
	do(t, ctx, "log in as ann", append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(srv.URL + "/")}, logIn("ann")...)...)
	csrf := get(t, ctx, "the session's CSRF token", chromedp.AttributeValue(css(`input[name="csrf"]`), "value")).Value
	cookies := get(t, ctx, "the session cookie", chromedp.Action[network.GetCookiesResult](func(ctx context.Context, t *chromedp.Target) (network.GetCookiesResult, error) {
		return cdp.Call(ctx, t, network.GetCookies, network.GetCookiesParams{})
	}))
	copied := func(method, path string, form url.Values) int {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for _, c := range cookies.Cookies {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	grant := url.Values{"csrf": {csrf}, "key": {"copied-1"}, "owner": {"alice"}, "currency": {"CRED"}, "amount": {"7"}}
	require.Equal(t, http.StatusOK, copied(http.MethodGet, "/", nil), "the copy works while the session lives")

	do(t, ctx, "log out", chromedp.Click(css("header form button")), chromedp.WaitVisible(css("#login")))
	assert.Equal(t, http.StatusSeeOther, copied(http.MethodGet, "/", nil), "the copy is sent to log in")
	assert.Equal(t, http.StatusUnauthorized, copied(http.MethodPost, "/grant", grant), "the copy cannot grant")
	bal, err := tr.Ledger().Balance(context.Background(), "wallet/CRED/alice")
	require.NoError(t, err)
	assert.True(t, bal.Available.IsZero(), "nothing moved: %s", bal.Available)

	do(t, ctx, "log in again and end all sessions", append(logIn("ann"),
		chromedp.Navigate(srv.URL+"/sessions"),
		chromedp.WaitVisible(css("#end-all-form")),
		chromedp.Click(css("#end-all-submit")),
		chromedp.WaitVisible(css("#login")))...)
	do(t, ctx, "a page asks to log in", chromedp.Navigate(srv.URL+"/caps"), chromedp.WaitVisible(css("#login")))
}

// TestBrowserAccountPages: a statement of 120 entries shows 50 at a time
// in Chromium, newest first, and the pager's links walk it both ways.
func TestBrowserAccountPages(t *testing.T) {
	srv, tr, _ := testConsole(t)
	grants(t, tr, 120)
	ctx := browse(t)
	rows := func() int {
		return get(t, ctx, "the statement's rows", chromedp.Evaluate[int](`document.querySelectorAll("#statement tr").length - 1`))
	}
	top := css("#statement tr:nth-child(2) td:first-child")
	do(t, ctx, "log in and open alice's account", append(append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(srv.URL + "/account?id=wallet/CRED/alice")}, logIn("ann")...),
		chromedp.WaitVisible(css("#statement")))...)
	assert.Equal(t, statementPage, rows(), "one page of the statement")
	assert.Equal(t, "120", get(t, ctx, "the newest entry", chromedp.Text(top)))
	height := get(t, ctx, "the page's height", chromedp.Evaluate[int](`document.documentElement.scrollHeight`))
	assert.Less(t, height, 3000, "no 6,000-pixel table")

	// Each page is told by its links (a link vanishes as well while the
	// next page loads).
	do(t, ctx, "older", chromedp.Click(css("a.older")), chromedp.WaitVisible(css(`a.older[href*="before=21&"]`)))
	assert.Equal(t, "70", get(t, ctx, "the page's newest entry", chromedp.Text(top)))
	do(t, ctx, "older again", chromedp.Click(css("a.older")), chromedp.WaitVisible(css(`a.newer[href*="before=71&"]`)))
	assert.Equal(t, 20, rows(), "the last page holds the rest")
	assert.Contains(t, get(t, ctx, "the pager", chromedp.Text(css("nav.pager"))), "entries 1–20 of 120")
	assert.Zero(t, get(t, ctx, "older links", chromedp.Evaluate[int](`document.querySelectorAll("a.older").length`)), "nothing older than the first entry")
	do(t, ctx, "back to the newest", chromedp.Click(css("a.newest")), chromedp.WaitVisible(css(`a.older[href*="before=71&"]`)))
	assert.Equal(t, "120", get(t, ctx, "the newest entry", chromedp.Text(top)))
}

// TestBrowserRefresh: the balances reload themselves (every second
// here) and show a grant made elsewhere; paused, they stay as they are
// until resumed; and they never reload over a half-typed form.
func TestBrowserRefresh(t *testing.T) {
	cfg, tr, _ := testConfig(t)
	// Two currencies: the forms' selects have no choice made yet.
	require.NoError(t, tr.Ledger().CreateCurrency(context.Background(), currency.Currency{Code: "EUR", Scale: 2}))
	cfg.Refresh = time.Second
	srv, _ := serve(t, cfg)
	ctx := browse(t)
	alice := css(`[id="w-wallet/CRED/alice"] .avail`)
	n := 0
	grantElsewhere := func() {
		t.Helper()
		n++
		_, err := tr.Grant(context.Background(), "bea", "CRED", "alice", decimal.NewFromInt(1), fmt.Sprint("elsewhere-", n), "")
		require.NoError(t, err)
	}
	// balanceAfter waits up to d for alice's balance to read want.
	balanceAfter := func(d time.Duration, want string) string {
		t.Helper()
		var got string
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			// A read while the page reloads may fail: read again.
			tctx, cancel := context.WithTimeout(ctx, time.Second)
			text, err := chromedp.Run(tctx, chromedp.Text(alice))
			cancel()
			if err == nil {
				got = text
			}
			if got == want {
				break
			}
		}
		return got
	}
	do(t, ctx, "log in as ann", append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(srv.URL + "/")}, logIn("ann")...)...)
	do(t, ctx, "the balances", chromedp.WaitVisible(css("#refresh-toggle")))
	assert.Equal(t, "Pause refresh", get(t, ctx, "the button", chromedp.Text(css("#refresh-toggle"))))
	grantElsewhere()
	assert.Equal(t, "1.00", balanceAfter(5*time.Second, "1.00"), "the list reloaded itself")

	do(t, ctx, "pause", chromedp.Click(css("#refresh-toggle")))
	assert.Equal(t, "Resume refresh", get(t, ctx, "the button", chromedp.Text(css("#refresh-toggle"))))
	grantElsewhere()
	assert.Equal(t, "1.00", balanceAfter(2500*time.Millisecond, "2.00"), "paused: no reload")
	do(t, ctx, "resume", chromedp.Click(css("#refresh-toggle")))
	assert.Equal(t, "2.00", balanceAfter(5*time.Second, "2.00"), "resumed")

	// The page may be reloading itself as the typing starts (it was
	// resumed just now, and nothing is touched yet): the field found is
	// then gone, and the typing goes to the reloaded page's field.
	for try := 0; ; try++ {
		err := chromedp.Do(ctx, chromedp.SendKeys(css("#grant-amount"), "12"), chromedp.Blur(css("#grant-amount")))
		if err == nil || try == 2 || !strings.Contains(err.Error(), "No node with given id") {
			require.NoError(t, err, "type half a grant")
			break
		}
	}
	grantElsewhere()
	assert.Equal(t, "2.00", balanceAfter(2500*time.Millisecond, "3.00"), "no reload over a touched form")
	assert.Equal(t, "12", get(t, ctx, "what was typed", chromedp.Value(css("#grant-amount"))), "nothing typed is lost")
}

// TestBrowserContract: in Chromium, a running contract's page says the
// model it sold where its offer asked for any, what ran, that no meter
// measured it (charged as if every GPU were busy, marked), and what is
// due so far; the contracts list shows the model sold, not "any".
func TestBrowserContract(t *testing.T) {
	cfg, tr, store := testConfig(t)
	srv, _ := serve(t, cfg)
	furnish(t, tr, store)
	ctx := browse(t)
	do(t, ctx, "log in, to contract k30", append(append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(srv.URL + "/contract?id=k30")}, logIn("vic")...),
		chromedp.WaitVisible(css("#contract-model")))...)
	assert.Equal(t, "H100", get(t, ctx, "the model sold", chromedp.Text(css("#contract-model"))))
	assert.Equal(t, "/usr/bin/python3 train.py --epochs 3", get(t, ctx, "the job", chromedp.Text(css("#contract-job"))))
	assert.Contains(t, get(t, ctx, "the meter", chromedp.Text(css("#contract-meter"))), "charged as if every GPU were busy")
	assert.Contains(t, get(t, ctx, "the charge", chromedp.Text(css("#contract-charge"))), "1.29 CRED due so far")
	do(t, ctx, "contract k31", chromedp.Navigate(srv.URL+"/contract?id=k31"), chromedp.WaitVisible(css("#contract-exit")))
	assert.Equal(t, "3", get(t, ctx, "its exit status", chromedp.Text(css("#contract-exit"))))
	do(t, ctx, "the contracts of 2026-11-20", chromedp.Navigate(srv.URL+"/contracts?from=2026-11-20&to=2026-11-21"), chromedp.WaitVisible(css("#contracts")))
	assert.Equal(t, 0, get(t, ctx, "models shown as any", chromedp.Evaluate[int](`[...document.querySelectorAll("#contracts td")].filter(td => td.textContent == "any").length`)))
}
