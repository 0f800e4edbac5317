// Package contract is the contract, and only it: what an offer says
// (Terms, Class, JobSpec), what it costs (Curve, Price, Charge, Due,
// MaxCharge), what the exchange records of it once accepted (Contract,
// State, Reason, Reading, Counter, Waiting) and how that record may change.
//
// Pricing follows Costello's "A Market for Trading CPU Cycles": an offer
// names a time limit, a prepayment and two price curves, and a measured
// Usage settles into a charge and a refund. docs/pricing.md explains the
// formula with examples.
//
// The package is pure: no I/O, no clock, no float64. Money and prices are
// shopspring decimals; every charge is computed as an exact fraction and only
// then truncated to the currency's scale, so that the same terms and usage
// give the same charge on every machine, in the exchange and in the
// simulator alike.
package contract
