// Package workload is the jobs a simulated market trades: made up by
// seeded generators (Poisson or bursty arrivals, heavy-tailed run times,
// GPU counts, utilisation, deadlines) or read, one line at a time, from
// published cluster traces (Alibaba cluster-trace-gpu-v2023, Helios and
// Philly). A Source streams jobs in order of arrival, so that ten million
// of them never sit in memory at once.
//
// A scenario describes its workload with a Spec, and Open turns it into a
// Source. A Generator draws each concern (arrivals, run times, GPU counts,
// models, utilisation, deadlines, preemptibility, clients) from its own
// PCG stream of the seed, so that changing one distribution leaves the
// others' draws as they were; times are rounded to the millisecond and
// IDs are "j000001", "j000002", … in order of arrival.
//
// Traces are read by column name, not position, and must be in order of
// arrival; a row that goes back in time is an error (ErrOutOfOrder) that
// says how to sort the file. Errors name the line and column
// (*LineError); a Reader told to skip bad rows counts them instead
// (Skipped). Rows that are not GPU jobs the market could run are dropped
// and counted (Dropped). Arrivals count from the first row's time.
//
// An Alibaba pod list row (openb_pod_list_*.csv) is a job with:
//
//	ID          name
//	Client      qos (LS, BE, Burstable, Guaranteed): the trace has no
//	            users; ReadOptions.Clients spreads pods over n clients
//	            by a hash of their name instead
//	Arrival     creation_time − the first row's creation_time
//	Duration    deletion_time − scheduled_time (pods still running at the
//	            trace's end are deleted at its end)
//	GPUs        num_gpu; 0 (CPU-only) is dropped
//	Utilization gpu_milli/1000 for one GPU shared (num_gpu 1, gpu_milli
//	            under 1000), else ReadOptions.Utilization (1)
//	Model       the first of gpu_spec's '|'-separated models, "" (any) if
//	            empty or nan
//	Preemptible qos BE; LS, Guaranteed and Burstable are guaranteed
//	Reference   Duration
//
// and dropped if scheduled_time is empty (never scheduled) or equals
// deletion_time. pod_phase, cpu_milli and memory_mib are not read.
//
// A Helios cluster_log.csv row (and Philly's, as HeliosArtifact converts
// it) is a job with ID job_id, Client user, GPUs gpu_num (0 is dropped),
// Arrival submit_time − the first row's, and Duration and Reference the
// duration column, or end_time − start_time where it has none (neither:
// the job never ran, dropped). Times are "2006-01-02 15:04:05" in UTC,
// ISO 8601, or seconds. state, vc, cpu_num and node_num are not read.
//
// Write puts any Source out in the Alibaba, Helios or JSON-lines format;
// reading it back gives the same jobs within the format's resolution (a
// second for the CSV formats, which also keep only the fields they have
// columns for; JSONL keeps every field). Samples makes the small traces
// under examples/sim/traces.
package workload
