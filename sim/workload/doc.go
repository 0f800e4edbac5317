// Package workload is the jobs a simulated market trades: made up by
// seeded generators (Poisson or bursty arrivals, heavy-tailed run times,
// GPU counts, utilisation, deadlines) or read, one line at a time, from
// published cluster traces (Alibaba cluster-trace-gpu-v2023, Helios and
// Philly). A Source streams jobs in order of arrival, so that ten million
// of them never sit in memory at once.
//
// A scenario describes its workload with a Spec, and Open turns it into a
// Source. A generator draws each concern (arrivals, run times, GPU counts,
// models, utilisation, deadlines, preemptibility, clients) from its own
// PCG stream of the seed, so that changing one distribution leaves the
// others' draws as they were; times are rounded to the millisecond.
//
// Traces are read by column name, not position, and must be in order of
// arrival; a row that goes back in time is an error that says how to sort
// the file. Errors name the line and column (*LineError); a Reader told
// to skip bad rows counts them instead (Skipped). Rows that are not GPU
// jobs the market could run (CPU-only pods, pods never scheduled, jobs
// that ran for no time) are dropped and counted (Dropped).
//
// Write puts any Source out in the Alibaba, Helios or JSON-lines format;
// reading it back gives the same jobs within the format's resolution (a
// second for the CSV formats, which also keep only some of a Job's
// fields). Samples makes the small traces under examples/sim/traces.
package workload
