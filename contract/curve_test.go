package contract

import (
	"errors"
	"strings"
	"testing"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/shopspring/decimal"
)

// pts builds a curve from x, y, x, y, … constants.
func pts(xy ...string) Curve {
	var c Curve
	for i := 0; i+1 < len(xy); i += 2 {
		c = append(c, Point{X: dectest.D(xy[i]), Y: dectest.D(xy[i+1])})
	}
	return c
}

// wantErr checks that err is a *bourse.Error with the code and field.
func wantErr(tb testing.TB, err error, code bourse.Code, field string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("got no error, want %s at %q", code, field)
	}
	if got := bourse.ErrorCode(err); got != code {
		tb.Fatalf("code %s, want %s (%v)", got, code, err)
	}
	var e *bourse.Error
	errors.As(err, &e)
	if e.Field != field {
		tb.Fatalf("field %q, want %q (%v)", e.Field, field, err)
	}
	if e.Message == "" {
		tb.Fatalf("no message saying why: %v", err)
	}
}

func TestEval(t *testing.T) {
	third := "0.333333333333333333333333333333" // 30 places
	tests := []struct {
		name  string
		curve Curve
		x     string
		want  string
	}{
		{"empty is zero", nil, "5", "0"},
		{"flat at zero", Flat(dectest.D("0.01")), "0", "0.01"},
		{"flat above", Flat(dectest.D("0.01")), "4", "0.01"},
		{"flat below its only x", Flat(dectest.D("0.01")), "-1", "0"},
		{"ramp below rmin", Ramp(dectest.D("1"), dectest.D("3"), dectest.D("0.06")), "0.5", "0"},
		{"ramp at rmin", Ramp(dectest.D("1"), dectest.D("3"), dectest.D("0.06")), "1", "0"},
		{"ramp quarter", Ramp(dectest.D("1"), dectest.D("3"), dectest.D("0.06")), "1.5", "0.015"},
		{"ramp middle", Ramp(dectest.D("1"), dectest.D("3"), dectest.D("0.06")), "2", "0.03"},
		{"ramp at rmax", Ramp(dectest.D("1"), dectest.D("3"), dectest.D("0.06")), "3", "0.06"},
		{"ramp above rmax", Ramp(dectest.D("1"), dectest.D("3"), dectest.D("0.06")), "1000", "0.06"},
		{"jump at x0: below", pts("2", "5"), "1.999", "0"},
		{"jump at x0: at", pts("2", "5"), "2", "5"},
		{"three: below", pts("1", "1", "2", "3", "4", "3.5"), "0.99", "0"},
		{"three: at x0", pts("1", "1", "2", "3", "4", "3.5"), "1", "1"},
		{"three: first segment", pts("1", "1", "2", "3", "4", "3.5"), "1.5", "2"},
		{"three: at x1", pts("1", "1", "2", "3", "4", "3.5"), "2", "3"},
		{"three: second segment", pts("1", "1", "2", "3", "4", "3.5"), "3", "3.25"},
		{"three: at xn", pts("1", "1", "2", "3", "4", "3.5"), "4", "3.5"},
		{"three: above", pts("1", "1", "2", "3", "4", "3.5"), "5", "3.5"},
		{"plateau", pts("0", "1", "1", "1", "2", "2"), "0.5", "1"},
		{"non-terminating rounds at 30 places", pts("0", "0", "3", "1"), "1", third},
		{"rounds half up", pts("0", "0", "3", "2"), "1", "0.666666666666666666666666666667"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.curve.Eval(dectest.D(tt.x)); !got.Equal(dectest.D(tt.want)) {
				t.Errorf("Eval(%s) = %s, want %s", tt.x, got, tt.want)
			}
		})
	}
}

func TestCurveValidate(t *testing.T) {
	long := make(Curve, MaxPoints+1)
	for i := range long {
		long[i] = Point{X: decimal.NewFromInt(int64(i)), Y: decimal.NewFromInt(int64(i))}
	}
	tests := []struct {
		name   string
		curve  Curve
		field  string // "" with ok for a valid curve
		reason string
		ok     bool
	}{
		{name: "empty", curve: nil, ok: true},
		{name: "flat", curve: Flat(dectest.D("0.01")), ok: true},
		{name: "ramp", curve: Ramp(dectest.D("0.5"), dectest.D("2"), dectest.D("0.1")), ok: true},
		{name: "zero ramp", curve: Ramp(dectest.D("0"), dectest.D("1"), dectest.D("0")), ok: true},
		{name: "MaxPoints", curve: long[:MaxPoints], ok: true},
		{name: "18 places and digits", curve: pts("999999999999999999.999999999999999999", "0.000000000000000001"), ok: true},
		{name: "too many points", curve: long, field: "", reason: "MaxPoints"},
		{name: "negative x", curve: pts("-1", "0"), field: "[0].x", reason: "negative"},
		{name: "negative y", curve: pts("0", "0", "1", "-1"), field: "[1].y", reason: "negative"},
		{name: "duplicate x", curve: pts("1", "0", "1", "2"), field: "[1].x", reason: "duplicate"},
		{name: "unsorted x", curve: pts("0", "0", "2", "1", "1", "1"), field: "[2].x", reason: "unsorted"},
		{name: "decreasing y", curve: pts("0", "2", "1", "1"), field: "[1].y", reason: "decreasing"},
		{name: "ramp rmin above rmax", curve: Ramp(dectest.D("2"), dectest.D("1"), dectest.D("1")), field: "[1].x", reason: "unsorted"},
		{name: "too many places", curve: pts("0", "0.0000000000000000001"), field: "[0].y", reason: "decimal places"},
		{name: "too large", curve: pts("1000000000000000000", "1"), field: "[0].x", reason: "10^18"},
		{name: "absurd exponent", curve: Curve{{X: decimal.Zero, Y: decimal.New(1, -1000)}}, field: "[0].y", reason: "exponent"},
		{name: "absurd large exponent", curve: Curve{{X: decimal.New(1, 999999), Y: decimal.Zero}}, field: "[0].x", reason: "exponent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.curve.Validate()
			if tt.ok {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			wantErr(t, err, bourse.EInvalidCurve, tt.field)
			if !strings.Contains(bourse.ErrorMessage(err), tt.reason) {
				t.Errorf("message %q does not say %q", bourse.ErrorMessage(err), tt.reason)
			}
		})
	}
}

func TestCurveEqual(t *testing.T) {
	if !pts("1", "1.5").Equal(pts("1.0", "1.50")) {
		t.Error("equal values written differently are unequal")
	}
	if !Curve(nil).Equal(Curve{}) {
		t.Error("nil and empty curves are unequal")
	}
	if pts("1", "1").Equal(pts("1", "2")) || pts("1", "1").Equal(pts("2", "1")) || pts("1", "1").Equal(nil) {
		t.Error("different curves are equal")
	}
}
