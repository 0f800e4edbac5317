package protocol_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
)

// pricingPath is the page of offers, curves and charges whose worked
// examples TestPricingDocExamples pins.
const pricingPath = "../docs/pricing.md"

// TestPricingDocExamples runs each worked example of docs/pricing.md as
// the exchange would: its terms must pass contract.Validate (a prepayment
// above the maximum charge, say, is refused), and contract.Charge and
// MaxCharge must give the numbers the page writes, in the sentences it
// writes them in (compared with runs of white space made one space).
func TestPricingDocExamples(t *testing.T) {
	b, err := os.ReadFile(pricingPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	const scale = 2
	scaleOf := func(code string) (int32, bool) { return scale, code == "GPU" }
	terms := func(gpus int, limit time.Duration, p contract.Curve, prepayment string) contract.Terms {
		return contract.Terms{Client: "alice", Currency: "GPU", GPUs: gpus, TimeLimit: limit, Prepayment: dectest.D(prepayment), P: p}
	}
	cent := contract.Flat(dectest.D("0.01"))
	seed4 := terms(4, time.Hour, cent, "50")
	full, err := contract.ParseTerms([]byte(fullOffer(t, string(b))))
	if err != nil {
		t.Fatalf("the JSON form of an offer: %v", err)
	}

	tests := []struct {
		name  string
		terms contract.Terms
		usage contract.Usage
		// says are what the page writes of the example, given the charge,
		// the refund and the maximum charge.
		says func(charge, refund, max string) []string
	}{
		{"4 GPUs for 8 minutes", seed4, contract.Usage{U: dectest.D("1920"), T: 480 * time.Second},
			func(charge, refund, max string) []string {
				return []string{
					"**4 GPUs for 8 minutes**, under a time limit of 1 hour with a prepayment of 50:",
					"charge = 1920 · 0.01 = **" + charge + "**, and the refund is 50 − " + charge + " = **" + refund + "**.",
					"4 · 3600 · 0.01 = **" + max + "**, so a prepayment of 50 is allowed",
				}
			}},
		{"2 GPUs for 10 minutes", terms(2, 10*time.Minute, cent, "12"), contract.Usage{U: dectest.D("1200"), T: 600 * time.Second},
			func(charge, refund, max string) []string {
				return []string{
					"**2 GPUs for 10 minutes**, under a time limit of 10 minutes:",
					"charge = **" + charge + "**. A prepayment of exactly " + max + ", the maximum charge, is used up: refund " + refund + ", `Exhausted`.",
				}
			}},
		{"half busy", seed4, contract.Usage{U: dectest.D("960"), T: 480 * time.Second},
			func(charge, refund, _ string) []string {
				return []string{"Half busy, 4 GPUs for 480 s under the first example's terms: `U` = 960, `r` = 2, charge **" + charge + "**, refund " + refund}
			}},
		{"the full example", full, contract.Usage{U: dectest.D("1350"), T: 10 * time.Minute, S: dectest.D("4")},
			func(charge, refund, max string) []string {
				return []string{
					"the charge is **" + charge + "**, the refund 12.50 − " + charge + " = **" + refund + "**.",
					"Its maximum charge is 4·600·0.01 + 600·0.001 = **" + max + "**.",
				}
			}},
		{"rounding down", terms(1, 2*time.Hour, contract.Flat(dectest.D("0.001")), "5.00"), contract.Usage{U: dectest.D("1239"), T: 1239 * time.Second},
			func(charge, refund, _ string) []string {
				return []string{
					"`P` flat 0.001, 1 GPU, under a time limit of 2 hours, `U` = 1239 GPU-s in `T` = 1239 s:",
					"charged **" + charge + "**; with a prepayment of 5.00 the refund is **" + refund + "**, and " + charge + " + " + refund + " = 5.00.",
				}
			}},
		{"never half up", terms(1, time.Hour, contract.Curve{{X: dectest.D("0"), Y: dectest.D("0")}, {X: dectest.D("3"), Y: dectest.D("2")}}, "5"),
			contract.Usage{U: dectest.D("1"), T: time.Second},
			func(charge, _, _ string) []string {
				return []string{"the amount is 0.6666…, charged **" + charge + "** (never 0.67"}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := contract.Validate(tt.terms, scaleOf); err != nil {
				t.Fatalf("the exchange refuses the example: %v", err)
			}
			st, err := contract.Charge(tt.terms, tt.usage, scale)
			if err != nil {
				t.Fatal(err)
			}
			max := contract.MaxCharge(tt.terms, scale)
			for _, s := range tt.says(st.Charge.String(), st.Refund.String(), max.String()) {
				if !strings.Contains(doc, s) {
					t.Errorf("%s does not say %q (charge %s, refund %s, maximum %s)", pricingPath, s, st.Charge, st.Refund, max)
				}
			}
		})
	}

	// The counter-example the page gives: the same job under a limit of 8
	// minutes may not prepay 50.
	short := seed4
	short.TimeLimit = 8 * time.Minute
	err = contract.Validate(short, scaleOf)
	if bourse.ErrorCode(err) != bourse.EInvalidOffer {
		t.Errorf("a prepayment of 50 under a limit of 8 minutes: %v, want %s", err, bourse.EInvalidOffer)
	}
	if want := fmt.Sprintf("with a time limit of 8 minutes the maximum charge would be %s, and a prepayment of 50 would be refused as above it: `%s`",
		contract.MaxCharge(short, scale), bourse.EInvalidOffer); !strings.Contains(doc, want) {
		t.Errorf("%s does not say %q", pricingPath, want)
	}
}

// fullOffer is the JSON block under "The JSON form of an offer".
func fullOffer(t *testing.T, doc string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "## The JSON form of an offer")
	if !ok {
		t.Fatalf("%s has no section \"The JSON form of an offer\"", pricingPath)
	}
	_, rest, ok = strings.Cut(rest, "```json\n")
	if !ok {
		t.Fatalf("%s: no json block under \"The JSON form of an offer\"", pricingPath)
	}
	block, _, _ := strings.Cut(rest, "```")
	return block
}
