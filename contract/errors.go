package contract

import (
	"fmt"

	"github.com/bourse/bourse"
)

// fail builds the *bourse.Error every check in this package returns: the
// code says which rule broke, field names the input ("p[2].x"), and the
// message says why for a person to read.
func fail(code bourse.Code, op, field, format string, args ...any) *bourse.Error {
	return &bourse.Error{Code: code, Op: op, Field: field, Message: fmt.Sprintf(format, args...)}
}
