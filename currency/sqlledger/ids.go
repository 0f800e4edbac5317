package sqlledger

import (
	"crypto/sha1"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// namespace is the UUID namespace of the ledger's row keys:
// uuid.NewSHA1(uuid.NameSpaceURL, "https://github.com/bourse/bourse/currency/sqlledger").
// Stored keys depend on it: never change it.
var namespace = uuid.MustParse("aec3a1d2-fdf8-580b-b021-55eb86cd2a63")

// uid is a row key as pgx encodes a UUID natively. (uuid.UUID would go
// through its driver.Valuer, a string, at several times the cost.)
type uid = [16]byte

// Row keys are version-5 UUIDs of the string IDs, one name space per table
// (the prefix), so that the same string in two tables gets two keys.
func accountUID(id currency.AccountID) uid { return derive("account:", string(id)) }
func holdUID(id currency.HoldID) uid       { return derive("hold:", string(id)) }
func movementUID(id string) uid            { return derive("movement:", id) }
func resultUID(key string) uid             { return derive("result:", key) }

// derive is uuid.NewSHA1(namespace, prefix+id) without its allocations
// (a transaction derives a dozen keys or so).
func derive(prefix, id string) uid {
	var buf [16 + 32 + currency.MaxIDLen]byte
	b := append(append(append(buf[:0], namespace[:]...), prefix...), id...)
	sum := sha1.Sum(b)
	var u uid
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return u
}

// dec is how amounts travel to the database: as text, which PostgreSQL and
// CockroachDB parse exactly into DECIMAL.
func dec(d decimal.Decimal) string { return d.String() }

// parseDec reads an amount that the database printed (a DECIMAL cast to
// TEXT, "12.340000000000000000") in its shortest form ("12.34").
func parseDec(s string) (decimal.Decimal, error) {
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("amount %q: %w", s, err)
	}
	return d, nil
}

// TIMESTAMPTZ keeps microseconds; the nanoseconds below them go to a
// column of their own so that every time reads back as it was written.
func splitTime(t time.Time) (time.Time, int32) {
	return t.Truncate(time.Microsecond), int32(t.Nanosecond() % 1000)
}

func joinTime(t time.Time, ns int32) time.Time { return t.UTC().Add(time.Duration(ns)) }
