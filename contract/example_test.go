package contract_test

import (
	"fmt"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/shopspring/decimal"
)

// The example of seeds/000: 4 GPUs at 0.01 per GPU-second, busy for 8
// minutes, with 50 escrowed.
func ExampleCharge() {
	terms := contract.Terms{
		Client:     "alice",
		Currency:   "GPU",
		GPUs:       4,
		TimeLimit:  time.Hour,
		Prepayment: decimal.RequireFromString("50"),
		P:          contract.Flat(decimal.RequireFromString("0.01")),
	}
	use := contract.Usage{U: decimal.NewFromInt(4 * 480), T: 480 * time.Second}
	s, err := contract.Charge(terms, use, 2)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Charge.StringFixed(2), s.Refund.StringFixed(2), contract.MaxCharge(terms, 2).StringFixed(2))
	// Output: 19.20 30.80 144.00
}

// Costello's three-parameter price: nothing below half a GPU busy on
// average, rising to 0.01 per GPU-second at 4.
func ExampleRamp() {
	p := contract.Ramp(decimal.RequireFromString("0.5"), decimal.NewFromInt(4), decimal.RequireFromString("0.01"))
	for _, r := range []string{"0.25", "0.5", "2.25", "4", "8"} {
		fmt.Println(r, p.Eval(decimal.RequireFromString(r)))
	}
	// Output:
	// 0.25 0
	// 0.5 0
	// 2.25 0.005
	// 4 0.01
	// 8 0.01
}

func ExampleParseTerms() {
	terms, err := contract.ParseTerms([]byte(`{"client":"bob","currency":"GPU","gpus":2,
		"time_limit":"10m","prepayment":"12.00","p":[["0","0.01"]]}`))
	if err != nil {
		panic(err)
	}
	scale := func(code string) (int32, bool) { return 2, code == "GPU" }
	fmt.Println(contract.Validate(terms, scale), contract.MaxCharge(terms, 2))
	// Output: <nil> 12
}
