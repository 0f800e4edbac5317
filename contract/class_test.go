package contract_test

import (
	"strings"
	"testing"

	"github.com/bourse/bourse/contract"
)

// TestFoldModelAgreesWithFits: two models fold to one key (routing's
// books, market data's lines, a server's count of models) exactly where
// Class.Fits takes one for the other, letters outside ASCII included.
func TestFoldModelAgreesWithFits(t *testing.T) {
	models := []string{"H100", "h100", "H100 ", "A100", "ıh100", "Ih100", "ih100", "ſxm", "SXM", "sxm",
		"K80", "\u212a80", "k80", "ß", "\u1e9e", "ǅ", "Ǆ", "ǆ", "Σ", "σ", "ς", "\xff", "\ufffd", ""}
	for _, a := range models {
		for _, b := range models {
			fit := contract.Class{Model: a}.Fits(b, 0) && a != ""
			same := contract.FoldModel(a) == contract.FoldModel(b)
			if a != "" && fit != same {
				t.Errorf("%q and %q: Fits %v, folded alike %v", a, b, fit, same)
			}
			if fit != strings.EqualFold(a, b) && a != "" {
				t.Errorf("%q and %q: Fits %v, EqualFold %v", a, b, fit, !fit)
			}
		}
	}
	if got := contract.FoldModel("H100"); got != "h100" {
		t.Errorf("FoldModel(H100) = %q, want h100", got)
	}
}
