// Package pricing prices GPU time the way Costello's "A Market for Trading
// CPU Cycles" prices cycles: an offer (Terms) names a time limit, a
// prepayment and two price curves, and a measured Usage settles into a charge
// and a refund.
//
// The package is pure: no I/O, no clock, no float64. Money and prices are
// shopspring decimals; every charge is computed as an exact fraction and only
// then truncated to the currency's scale, so that the same terms and usage
// give the same charge on every machine, in the exchange and in the
// simulator alike. docs/pricing.md explains the formula with examples.
package pricing
