// Package server is a GPU server's rules: the Node, which owns the GPUs and
// decides on the offers the exchange routes to it with a pluggable Policy,
// claims GPUs for accepts, honours its counter-offers, keeps bookings,
// chooses what to preempt, starts jobs with a Runner and says when each
// job's reading is due and when a job must stop; and the policies.
//
// The Node and the policies read no clock, start no goroutine and talk to
// no NATS: every Node method takes the time, and policies read it from
// their View. The NATS agent (server/agent) drives a Node in production;
// the simulator drives the same Node on a virtual clock. The Synthetic
// runner stands in for real processes (server/process) and NVML
// (server/nvmlmeter) in the demo, the simulator and tests; it reads the
// clock it is given, and only without one the wall clock, ending its jobs
// by timers.
package server
