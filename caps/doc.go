// Package caps is the market's limits on what an owner may hold or
// commit: an owner is a client, or the project or organisation its wallet
// sits under. There are two kinds, both kept in the ledger:
//
//   - a concurrent-GPU cap, a wallet in the unit currency GPU-CAP
//     (GPUWallet) whose balance is how many GPUs its owner may hold in
//     contracts at once;
//   - a spend cap, a budget of what its owner may commit in a currency, a
//     wallet in the unit currency SPEND-<currency> (BudgetWallet): one a
//     period (an hour, a day or a month, UTC), minted with the cap's
//     limit, or one for good that the treasury refills as a token bucket
//     (Rate, Bucket).
//
// Because they are in the ledger, caps are checked where the money moves:
// an offer reserves its GPUs and its prepayment from every cap above its
// client (Admission.Reserves) in the ledger transaction of its escrow, so
// that no number of offers at once passes a cap, and an ended contract
// gives them back (Release) in the transaction that settles it. The
// treasury sets caps by committing the operations decided here (SetGPUs,
// BudgetTo, Bucket.Change, Bucket.Refill) on balances read in its own
// transaction.
//
// Which period is under way is decided by one clock: the one a Periods is
// given (there is no time.Now in this package). The House reserves from
// the budget of the period its Periods says is under way when it admits
// an offer; the treasury brings to a new limit the budget of the period
// its Periods says is under way when the cap is set. The House and the
// treasury of one process share one Periods (cmd/bourse, the demo market:
// the wall clock; the simulator: its virtual clock); instances on other
// machines each read their own wall clock, so that near a period's edge an
// offer may meet the old period on one machine and the new on another. A
// contract's settlement goes back to the budget it reserved from, the
// period it was admitted in, whatever any clock says by then.
package caps
