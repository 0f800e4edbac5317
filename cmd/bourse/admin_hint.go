package main

import (
	"fmt"
	"strings"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// grantHint adds to a grant's error what to do where owner has no wallet
// in cur yet: a grant moves money into a wallet, and opening one is its
// own, audited, action.
func grantHint(err error, cur currency.Code, owner string) error {
	if bourse.ErrorCode(err) == bourse.ENotFound && strings.Contains(err.Error(), "no account "+string(currency.WalletID(cur, owner))) {
		return fmt.Errorf("%w; open the wallet first: bourse admin open %s --currency %s", err, owner, cur)
	}
	return err
}
