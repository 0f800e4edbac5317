package caps_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
)

// Release voids every GPU cap hold and settles every spend hold, each if
// still open, under the keys every version of the exchange used: a
// contract made before the holds were one list settles under the same.
func TestRelease(t *testing.T) {
	c := &contract.Contract{ID: "c-1", Client: "alice", Terms: contract.Terms{Currency: "CRED"},
		CapHolds:   []string{"gpus/c-1", "gpus/c-1/acme.ml", "gpus/c-1/acme"},
		SpendHolds: []string{"spend/c-1/0", "spend/c-1/1"}}
	ended := "contract c-1 ended"
	want := []currency.Op{
		currency.Void{Key: "cap-release/c-1", Hold: "gpus/c-1", Memo: ended, IfOpen: true},
		currency.Void{Key: "cap-release/c-1/acme.ml", Hold: "gpus/c-1/acme.ml", Memo: ended, IfOpen: true},
		currency.Void{Key: "cap-release/c-1/acme", Hold: "gpus/c-1/acme", Memo: ended, IfOpen: true},
		currency.Capture{Key: "spend-settle/c-1/0", Hold: "spend/c-1/0", To: caps.SpentID("CRED"), Amount: dectest.D("2.5"), Memo: ended, IfOpen: true},
		currency.Capture{Key: "spend-settle/c-1/1", Hold: "spend/c-1/1", To: caps.SpentID("CRED"), Amount: dectest.D("2.5"), Memo: ended, IfOpen: true},
	}
	assert.Equal(t, want, caps.Release(c, dectest.D("2.5")))
	assert.Equal(t, want, caps.Release(c, dectest.D("2.5")), "the same again: it reads nothing")

	t.Run("OnlyAParentsCap", func(t *testing.T) {
		c := &contract.Contract{ID: "c-2", Client: "bob", CapHolds: []string{"gpus/c-2/acme.ml"}}
		assert.Equal(t, []currency.Op{currency.Void{Key: "cap-release/c-2/acme.ml", Hold: "gpus/c-2/acme.ml", Memo: "contract c-2 ended", IfOpen: true}},
			caps.Release(c, dectest.D("0")))
	})
	t.Run("NoCaps", func(t *testing.T) {
		assert.Empty(t, caps.Release(&contract.Contract{ID: "c-3"}, dectest.D("1")))
	})
}
