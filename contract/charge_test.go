package contract

import (
	"testing"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/shopspring/decimal"
)

// gpuTerms are terms for g GPUs with limit l, prices p and q, prepayment pre.
func gpuTerms(g int, l time.Duration, p, q Curve, pre string) Terms {
	return Terms{Client: "alice", Currency: "GPU", GPUs: g, TimeLimit: l, Prepayment: dectest.D(pre), P: p, Q: q}
}

func TestCharge(t *testing.T) {
	cent := Flat(dectest.D("0.01"))
	tests := []struct {
		name      string
		terms     Terms
		usage     Usage
		scale     int32
		charge    string
		refund    string
		exhausted bool
	}{
		// seeds/000: 4 GPUs at 0.01 per GPU-second, fully busy for 8 minutes.
		{"seed 000: 4 GPUs for 480 s", gpuTerms(4, time.Hour, cent, nil, "50"),
			Usage{U: dectest.D("1920"), T: 480 * time.Second}, 2, "19.2", "30.8", false},
		// seeds/000: 2 GPUs for 10 minutes; the prepayment is exactly enough.
		{"seed 000: 2 GPUs for 600 s", gpuTerms(2, 10*time.Minute, cent, nil, "12"),
			Usage{U: dectest.D("1200"), T: 600 * time.Second}, 2, "12", "0", true},
		// docs/pricing.md: r = 2.25 on a ramp from 0.5 to 4 pays 0.005; S = 4 pays 0.001 a second.
		{"docs example", fullTerms(), Usage{U: dectest.D("1350"), T: 10 * time.Minute, S: dectest.D("4")}, 2, "7.35", "5.15", false},
		{"half busy pays half", gpuTerms(4, time.Hour, cent, nil, "50"),
			Usage{U: dectest.D("960"), T: 480 * time.Second}, 2, "9.6", "40.4", false},
		{"rounds down: 1.239 is 1.23", gpuTerms(1, time.Hour, Flat(dectest.D("0.001")), nil, "5"),
			Usage{U: dectest.D("1239"), T: 1239 * time.Second}, 2, "1.23", "3.77", false},
		{"rounds down, never half up: 2/3 is 0.66", gpuTerms(1, time.Hour, pts("0", "0", "3", "2"), nil, "5"),
			Usage{U: dectest.D("1"), T: time.Second}, 2, "0.66", "4.34", false},
		{"scale 0", gpuTerms(4, time.Hour, cent, nil, "50"),
			Usage{U: dectest.D("1920"), T: 480 * time.Second}, 0, "19", "31", false},
		{"capped at prepayment", gpuTerms(4, time.Hour, cent, nil, "10"),
			Usage{U: dectest.D("1920"), T: 480 * time.Second}, 2, "10", "0", true},
		{"T = 0 charges nothing, even with U and a Q term", gpuTerms(1, time.Hour, cent, Flat(dectest.D("1")), "10"),
			Usage{U: dectest.D("5"), T: 0, S: dectest.D("1")}, 2, "0", "10", false},
		{"zero usage without Q is free", gpuTerms(2, time.Hour, cent, nil, "10"),
			Usage{T: time.Hour}, 2, "0", "10", false},
		{"below rmin is free", gpuTerms(1, time.Hour, Ramp(dectest.D("1"), dectest.D("2"), dectest.D("1")), nil, "10"),
			Usage{U: dectest.D("5"), T: 10 * time.Second}, 2, "0", "10", false},
		{"ramp between: r = 1.5 pays 0.5 per GPU-second", gpuTerms(2, time.Hour, Ramp(dectest.D("1"), dectest.D("2"), dectest.D("1")), nil, "100"),
			Usage{U: dectest.D("15"), T: 10 * time.Second}, 2, "7.5", "92.5", false},
		{"ramp above rmax", gpuTerms(4, time.Hour, Ramp(dectest.D("1"), dectest.D("2"), dectest.D("1")), nil, "100"),
			Usage{U: dectest.D("30"), T: 10 * time.Second}, 2, "30", "70", false},
		{"Q term: S = 1 on a 0..2 ramp to 0.5 pays 0.25 per second", gpuTerms(2, time.Hour, nil, Ramp(dectest.D("0"), dectest.D("2"), dectest.D("0.5")), "100"),
			Usage{T: 100 * time.Second, S: dectest.D("1")}, 2, "25", "75", false},
		{"both terms", gpuTerms(2, time.Hour, cent, Flat(dectest.D("0.001")), "100"),
			Usage{U: dectest.D("150"), T: 100 * time.Second, S: dectest.D("2")}, 2, "1.6", "98.4", false},
		{"nanoseconds count", gpuTerms(1, time.Hour, nil, Flat(dectest.D("1")), "100"),
			Usage{T: 1500 * time.Millisecond}, 2, "1.5", "98.5", false},
		{"clamp U to g·T", gpuTerms(2, time.Hour, Flat(dectest.D("1")), nil, "100"),
			Usage{U: dectest.D("100"), T: 10 * time.Second}, 2, "20", "80", false},
		{"clamp T to L raises the rate", gpuTerms(2, 10*time.Second, Ramp(dectest.D("0"), dectest.D("2"), dectest.D("2")), nil, "100"),
			Usage{U: dectest.D("10"), T: 20 * time.Second}, 2, "10", "90", false},
		{"clamp T to L in the Q term", gpuTerms(1, 10*time.Second, nil, Flat(dectest.D("0.1")), "100"),
			Usage{T: 20 * time.Second, S: dectest.D("1")}, 2, "1", "99", false},
		{"clamp S to g", gpuTerms(2, time.Hour, nil, Ramp(dectest.D("0"), dectest.D("4"), dectest.D("4")), "100"),
			Usage{T: 10 * time.Second, S: dectest.D("5")}, 2, "20", "80", false},
		{"U truncated to 18 places", gpuTerms(1, time.Hour, Flat(dectest.D("1000000")), nil, "100"),
			Usage{U: dectest.D("0.0000000000000000019"), T: time.Second}, 18, "0.000000000001", "99.999999999999", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Charge(tt.terms, tt.usage, tt.scale)
			if err != nil {
				t.Fatalf("Charge: %v", err)
			}
			if !s.Charge.Equal(dectest.D(tt.charge)) || !s.Refund.Equal(dectest.D(tt.refund)) || s.Exhausted != tt.exhausted {
				t.Errorf("Charge = %s, refund %s, exhausted %v; want %s, %s, %v",
					s.Charge, s.Refund, s.Exhausted, tt.charge, tt.refund, tt.exhausted)
			}
			if !s.Charge.Add(s.Refund).Equal(tt.terms.Prepayment) {
				t.Errorf("charge + refund = %s, want the prepayment %s", s.Charge.Add(s.Refund), tt.terms.Prepayment)
			}
		})
	}
}

func TestDueIsNotCapped(t *testing.T) {
	terms := gpuTerms(4, time.Hour, Flat(dectest.D("0.01")), nil, "10")
	due, err := Due(terms, Usage{U: dectest.D("1920"), T: 480 * time.Second}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !due.Equal(dectest.D("19.2")) {
		t.Errorf("Due = %s, want 19.2 (above the prepayment of 10)", due)
	}
}

// TestDueSoFar: a running contract owes what its last reading prices;
// one without a reading, or ended (its charge known), shows none.
func TestDueSoFar(t *testing.T) {
	terms := gpuTerms(4, time.Hour, Flat(dectest.D("0.01")), nil, "10")
	r := &Reading{U: dectest.D("120"), T: Duration(60 * time.Second)}
	c := Contract{Terms: terms, State: StateRunning, Reading: r}
	if due, ok := c.DueSoFar(2); !ok || !due.Equal(dectest.D("1.2")) {
		t.Errorf("running: DueSoFar = %s, %v; want 1.2", due, ok)
	}
	for _, c := range []Contract{
		{Terms: terms, State: StateAccepted},
		{Terms: terms, State: StateSettled, Reading: r},
		{Terms: terms, State: StateVoided, Reading: r},
		{Terms: Terms{}, State: StateRunning, Reading: r}, // cannot be priced
	} {
		if due, ok := c.DueSoFar(2); ok {
			t.Errorf("%s, reading %v: DueSoFar = %s, want none", c.State, c.Reading != nil, due)
		}
	}
}

func TestChargeErrors(t *testing.T) {
	ok := gpuTerms(2, time.Hour, Flat(dectest.D("0.01")), nil, "10")
	use := Usage{U: dectest.D("1"), T: time.Second, S: dectest.D("1")}
	tests := []struct {
		name  string
		edit  func(*Terms, *Usage, *int32)
		code  bourse.Code
		field string
	}{
		{"negative U", func(_ *Terms, u *Usage, _ *int32) { u.U = dectest.D("-0.1") }, bourse.EInvalid, "u"},
		{"negative T", func(_ *Terms, u *Usage, _ *int32) { u.T = -time.Nanosecond }, bourse.EInvalid, "t"},
		{"negative S", func(_ *Terms, u *Usage, _ *int32) { u.S = dectest.D("-1") }, bourse.EInvalid, "s"},
		{"absurd U exponent", func(_ *Terms, u *Usage, _ *int32) { u.U = decimal.New(1, -2000000000) }, bourse.EInvalid, "u"},
		{"absurd S exponent", func(_ *Terms, u *Usage, _ *int32) { u.S = decimal.New(1, 2000000000) }, bourse.EInvalid, "s"},
		{"negative scale", func(_ *Terms, _ *Usage, s *int32) { *s = -1 }, bourse.EInvalid, "scale"},
		{"scale above MaxPlaces", func(_ *Terms, _ *Usage, s *int32) { *s = MaxPlaces + 1 }, bourse.EInvalid, "scale"},
		{"no GPUs", func(t *Terms, _ *Usage, _ *int32) { t.GPUs = 0 }, bourse.EInvalidOffer, "gpus"},
		{"no time limit", func(t *Terms, _ *Usage, _ *int32) { t.TimeLimit = 0 }, bourse.EInvalidOffer, "time_limit"},
		{"broken P", func(t *Terms, _ *Usage, _ *int32) { t.P = pts("1", "0", "0", "1") }, bourse.EInvalidCurve, "p[1].x"},
		{"broken Q", func(t *Terms, _ *Usage, _ *int32) { t.Q = pts("0", "-1") }, bourse.EInvalidCurve, "q[0].y"},
		{"negative prepayment", func(t *Terms, _ *Usage, _ *int32) { t.Prepayment = dectest.D("-1") }, bourse.EInvalidOffer, "prepayment"},
		{"prepayment finer than scale", func(t *Terms, _ *Usage, _ *int32) { t.Prepayment = dectest.D("1.001") }, bourse.EInvalidOffer, "prepayment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			terms, u, scale := ok, use, int32(2)
			tt.edit(&terms, &u, &scale)
			_, err := Charge(terms, u, scale)
			wantErr(t, err, tt.code, tt.field)
			_, err = Due(terms, u, scale)
			wantErr(t, err, tt.code, tt.field)
		})
	}
}

func TestMaxCharge(t *testing.T) {
	tests := []struct {
		name  string
		terms Terms
		scale int32
		want  string
	}{
		{"seed 000: 4 GPUs for 480 s", gpuTerms(4, 480*time.Second, Flat(dectest.D("0.01")), nil, "1"), 2, "19.2"},
		{"with a Q term", gpuTerms(4, 480*time.Second, Flat(dectest.D("0.01")), Ramp(dectest.D("0"), dectest.D("4"), dectest.D("0.001")), "1"), 2, "19.68"},
		{"P at g, not at its top", gpuTerms(1, 100*time.Second, Ramp(dectest.D("0"), dectest.D("2"), dectest.D("1")), nil, "1"), 2, "50"},
		{"truncated", gpuTerms(1, time.Second, pts("0", "0", "3", "2"), nil, "1"), 2, "0.66"},
		{"docs example", fullTerms(), 2, "24.6"},
		{"no prices", gpuTerms(1, time.Hour, nil, nil, "1"), 2, "0"},
		{"invalid terms give zero", gpuTerms(0, time.Hour, Flat(dectest.D("1")), nil, "1"), 2, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MaxCharge(tt.terms, tt.scale); !got.Equal(dectest.D(tt.want)) {
				t.Errorf("MaxCharge = %s, want %s", got, tt.want)
			}
		})
	}
}
