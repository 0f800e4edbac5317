// Package server is the agent on a GPU node. It registers with the exchange,
// decides on the offers the exchange routes to it with a pluggable Policy,
// runs accepted jobs with a Runner, and reports their cumulative usage to
// JetStream until a final reading settles each contract.
//
// Policies are pure: they read the clock and the server's state from their
// arguments, so the simulator runs the same code without NATS or sleeping.
// The agent is the only part that talks to NATS; the Synthetic runner stands
// in for real processes and NVML in the demo and in tests.
package server
