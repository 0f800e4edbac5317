package console

import (
	"cmp"
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
)

var contractLinkRE = regexp.MustCompile(`<td><a href="/contract\?id=([^"]+)">`)

// TestContracts: the contracts of a range of days are listed newest
// first, as bourse bid contracts lists them, 50 a page, each linked to a
// page of its own, which an account's statement links to as well; a
// filter keeps the pages full. Contracts accepted at one instant are
// listed by id, highest first, across a page's end too.
func TestContracts(t *testing.T) {
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	srv, cfg, tr, store := consoleAt(t, day.Add(23*time.Hour))
	ctx := context.Background()
	var at []time.Time
	for i := range 60 {
		at = append(at, day.Add(time.Duration(i/3)*time.Minute)) // three at each instant
	}
	settle(t, store, at, []string{"0.2", "0.35"})
	var want []string
	for i, when := range at {
		want = append(want, fmt.Sprintf("k%d-%d", when.Unix(), i))
	}
	slices.SortFunc(want, func(a, b string) int { // newest first, then the highest id
		ta, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(a, "-")[0], "k"))
		tb, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(b, "-")[0], "k"))
		return cmp.Or(cmp.Compare(tb, ta), strings.Compare(b, a))
	})
	want = append([]string{"c-escrowed"}, want...) // accepted at 02:00, the newest

	// One contract as the exchange makes it: its prepayment escrowed.
	_, err := tr.Grant(ctx, "root", "CRED", "alice", decimal.NewFromInt(50), "g", "")
	require.NoError(t, err)
	k := contract.Contract{ID: "c-escrowed", Client: "alice", Server: "atlas", State: contract.StateRunning, AcceptedAt: day.Add(2 * time.Hour),
		Terms: contract.Terms{Client: "alice", Currency: "CRED", GPUs: 2, TimeLimit: 10 * time.Minute,
			Prepayment: decimal.NewFromInt(12), P: contract.Flat(decimal.RequireFromString("0.35")),
			Job: &contract.JobSpec{Command: "/usr/bin/python3", Args: []string{"train.py", "--lr", "0.1"}}},
		Model: "H100", Meter: contract.MeterFullUse, StartedAt: day.Add(2 * time.Hour),
		Reading: &contract.Reading{Contract: "c-escrowed", Seq: 3, U: decimal.NewFromInt(6), T: contract.Duration(3 * time.Second), S: decimal.NewFromInt(2)}}
	_, _, err = store.Open(ctx, k, "", currency.Reserve{Key: "escrow/o1", Hold: currency.HoldID(k.ID), From: "wallet/CRED/alice", Amount: k.Terms.Prepayment, Deadline: day.Add(3 * time.Hour)})
	require.NoError(t, err)

	b := newBrowser(t, srv)
	b.login("vic")
	code, page := b.get("/contracts")
	require.Equal(t, http.StatusOK, code)
	ids := func(page string) []string {
		var out []string
		for _, m := range contractLinkRE.FindAllStringSubmatch(page, -1) {
			out = append(out, m[1])
		}
		return out
	}
	first := ids(page)
	require.Len(t, first, contractsPage)
	assert.Equal(t, want[:contractsPage], first, "newest first")
	assert.Contains(t, page, `<td class="num">0.20</td>`, "a charge in its currency's places")
	m := regexp.MustCompile(`<a href="(/contracts\?[^"]+)" class="older"`).FindStringSubmatch(page)
	require.NotNil(t, m, "a link to the next page")
	_, page = b.get(html.UnescapeString(m[1]))
	assert.Equal(t, want[contractsPage:], ids(page), "the eleven oldest, the rest of an instant cut by the page's end first")
	assert.NotContains(t, page, `class="older"`)
	code, _ = b.get("/contracts?before=soon")
	assert.Equal(t, http.StatusBadRequest, code)

	_, page = b.get("/contracts?state=running")
	assert.Equal(t, [][]string{{`<td><a href="/contract?id=c-escrowed">`, "c-escrowed"}}, contractLinkRE.FindAllStringSubmatch(page, -1), "a filter")
	_, page = b.get("/contracts?client=nobody")
	assert.Contains(t, page, "no contracts accepted in these days")
	code, _ = b.get("/contracts?from=yesterday")
	assert.Equal(t, http.StatusBadRequest, code)

	code, page = b.get("/contract?id=c-escrowed")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, `<td id="contract-state">running</td>`)
	assert.Contains(t, page, `<a href="/account?id=wallet%2fCRED%2falice">alice</a>`)
	assert.Contains(t, page, `12.00 CRED (<a href="/account?id=escrow%2fc-escrowed">escrow</a>)`)
	// What an administrator asks of a contract: the model sold (its offer
	// asked for any), what ran, how it was measured (no meter here: a
	// charge as if every GPU were busy), its exit status, and the amount
	// due while it runs, per GPU-hour beside the wire's per GPU-second.
	assert.Contains(t, page, "2 × any model")
	assert.Contains(t, page, `<td id="contract-model">H100</td>`)
	assert.Contains(t, page, `<td id="contract-job"><code>/usr/bin/python3 train.py --lr 0.1</code></td>`)
	assert.Contains(t, page, `<td id="contract-meter" class="warn">full_use: no GPU meter: charged as if every GPU were busy`)
	assert.Contains(t, page, `<td id="contract-exit">-</td>`)
	assert.Contains(t, page, `<td class="num" id="contract-charge">2.10 CRED due so far`)
	assert.Contains(t, page, "1260.00 CRED <span class=\"muted\">(per GPU-second: 0.35)</span>")
	_, list := b.get("/contracts?state=running")
	assert.Contains(t, list, `<td>H100</td>`, "the model sold, not any")
	assert.Contains(t, list, `<td class="num">~2.10</td>`, "a running contract's amount due")

	_, page = b.get("/account?id=wallet/CRED/alice")
	assert.Contains(t, page, `<a href="/contract?id=c-escrowed" class="contract">c-escrowed</a>`, "the statement links the contract")

	code, page = b.get("/contract?id=c-none")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, page, "not_found")

	cfg.Contracts = nil
	bare, _ := serve(t, cfg)
	nb := newBrowser(t, bare)
	nb.login("vic")
	_, page = nb.get("/contracts")
	assert.Contains(t, page, "no contract store")
	code, _ = nb.get("/contract?id=c-escrowed")
	assert.Equal(t, http.StatusNotFound, code)
}

func TestContractOfHold(t *testing.T) {
	for h, want := range map[currency.HoldID]string{"c-1": "c-1", "gpus/c-1": "c-1", "gpus/c-1/acme": "c-1", "spend/c-1/0": "c-1"} {
		assert.Equal(t, want, contractOfHold(h), h)
	}
}
