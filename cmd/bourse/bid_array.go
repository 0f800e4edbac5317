package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server/process"
)

// A job array's bounds: each task is an offer, and its index ends each
// offer's request id, which the exchange takes up to 128 characters.
const (
	maxArrayTasks = 1000
	maxArrayIndex = 99999
	// maxInFlight bounds --in-flight: each offer in negotiation is a
	// request the exchange routes to servers, and an array is one
	// client's traffic.
	maxInFlight = 64
)

// parseArraySpec reads --array's SPEC, as Slurm's sbatch --array: N alone
// is the indexes 0 to N-1; otherwise a comma list of indexes I, ranges
// A-B (A to B, both included) and stepped ranges A-B:S (A, A+S, … up to
// B). A final %N is the throttle: at most N of the array's offers and
// contracts live at once (0 if none is given). The indexes come sorted,
// each once.
func parseArraySpec(spec string) (indexes []int, throttle int, err error) {
	bad := func(format string, args ...any) error {
		return usagef("--array %q: "+format, append([]any{spec}, args...)...)
	}
	list, limit, throttled := strings.Cut(spec, "%")
	if throttled {
		n, ok := arrayNumber(limit)
		if !ok || n < 1 || n > maxArrayTasks {
			return nil, 0, bad("%%%s is not a throttle: want %%N, at most N of the array's contracts live at once, N 1 to %d", limit, maxArrayTasks)
		}
		throttle = n
	}
	if n, ok := arrayNumber(list); ok {
		if n < 1 || n > maxArrayTasks {
			return nil, 0, bad("want 1 to %d tasks", maxArrayTasks)
		}
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out, throttle, nil
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(list, ",") {
		span, by, stepped := strings.Cut(part, ":")
		from, to, isRange := strings.Cut(span, "-")
		a, okA := arrayNumber(from)
		b, okB := a, okA
		if isRange {
			b, okB = arrayNumber(to)
		}
		if !okA || !okB {
			return nil, 0, bad("%q is not an index I or a range A-B or A-B:STEP; want N (0 to N-1), or a list such as 0-9,20 or 0-99:5, and %%N after it to throttle", part)
		}
		step := 1
		if stepped {
			n, ok := arrayNumber(by)
			if !isRange || !ok || n < 1 {
				return nil, 0, bad("%q: a step goes after a range, A-B:STEP, STEP 1 or more", part)
			}
			step = n
		}
		if a > maxArrayIndex || b > maxArrayIndex {
			return nil, 0, bad("index %d: want 0 to %d", max(a, b), maxArrayIndex)
		}
		if b < a {
			return nil, 0, bad("range %s ends before it starts", part)
		}
		if len(seen)+(b-a)/step+1 > maxArrayTasks {
			return nil, 0, bad("more than %d tasks", maxArrayTasks)
		}
		for i := a; i <= b; i += step {
			if seen[i] {
				return nil, 0, bad("index %d given twice", i)
			}
			seen[i] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), throttle, nil
}

// arrayNumber reads decimal digits alone (no sign, no space), bounded
// so that it cannot overflow.
func arrayNumber(s string) (int, bool) {
	if s == "" || len(s) > 9 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// checkArray holds --array to what the rest of the command line allows;
// t is the offer's terms as the flags shape them.
func (o *offerFlags) checkArray(fs *pflag.FlagSet, t contract.Terms) error {
	if !fs.Changed("array") {
		if fs.Changed("in-flight") {
			return usagef("--in-flight bounds an array's offers in negotiation at once: give --array too, or drop it")
		}
		return nil
	}
	switch {
	case o.take != "":
		return usagef("--array makes an offer per index and takes no counter-offer: drop --take")
	case o.auto != "":
		return usagef("--array offers the same terms at every index, and --auto negotiates one offer: drop --auto and give --price (or run --auto once per index)")
	}
	if t.Job == nil || (t.Job.Command == "" && t.Job.Image == "") {
		return usagef("--array needs --command or --image (or -f with such a job): a synthetic job has no environment to tell it its index")
	}
	for _, k := range []string{process.ArrayIndexEnv, process.ArraySizeEnv} {
		if _, ok := t.Job.Env[k]; ok {
			return usagef("--export %s: --array sets it, to each offer's own", k)
		}
	}
	if o.inFlight < 1 || o.inFlight > maxInFlight {
		return usagef("--in-flight %d: want 1 to %d offers in negotiation at once", o.inFlight, maxInFlight)
	}
	var err error
	if o.indexes, o.throttle, err = parseArraySpec(o.array); err != nil {
		return err
	}
	if most := 128 - len(bidder.ArrayRequestID("", o.indexes[len(o.indexes)-1])); len(o.requestID) > most {
		return usagef("--request-id: at most %d characters with --array %s, whose offers' ids are ID/INDEX", most, o.array)
	}
	return nil
}

// arrayTask is one index's offer and its answer, as --json prints it.
type arrayTask struct {
	Index     int    `json:"index"`
	RequestID string `json:"request_id"`
	protocol.OfferReply
	Error *jsonError `json:"error,omitempty"`

	err error
}

// made says whether the task's offer made a contract, or waits in the
// book for one (--wait), as a single offer's success does.
func (k arrayTask) made() bool { return k.err == nil && (k.Contract != nil || k.Queued != nil) }

// offerArray makes t's offer once per index of o.indexes, each with its
// own request id (ID/INDEX, so that the same command again escrows
// nothing twice) and its job told its index and the array's size, as
// bidder.Client.OfferArray sends them, then prints the answers in the
// indexes' order.
func (o *offerFlags) offerArray(ctx context.Context, cmd *cobra.Command, f *bidFlags, c *bidder.Client, t contract.Terms) error {
	bar := newArrayBar(cmd.ErrOrStderr(), len(o.indexes))
	offers := c.OfferArray(ctx, o.requestID, o.indexes, func(i int) contract.Terms { return arrayTerms(t, i, len(o.indexes)) },
		bidder.ArrayOptions{InFlight: o.inFlight, Throttle: o.throttle, Wait: o.wait}, func(bidder.ArrayOffer) { bar.Add() })
	bar.Done()
	tasks := make([]arrayTask, len(offers))
	for n, a := range offers {
		tasks[n] = arrayTask{Index: a.Index, RequestID: a.RequestID, OfferReply: a.Reply, err: a.Err}
		tasks[n].answered()
	}
	if err := o.printArray(cmd, f, tasks); err != nil {
		return err
	}
	return arrayError(ctx, o, tasks)
}

// answered judges k's answer: a reply with neither contract nor waiting
// offer is the market's no, said as a single offer says it.
func (k *arrayTask) answered() {
	if k.err != nil || k.Contract != nil || k.Queued != nil {
		return
	}
	k.err = rejected(k.Rejections)
	if len(k.Counters) > 0 {
		k.err = &bourse.Error{Code: bourse.ERejected, Op: "bid.offer",
			Message: fmt.Sprintf("%d counter-offer(s), none taken: an array takes none (bourse bid offer --take SERVER, with this offer's terms, takes one)", len(k.Counters))}
	}
}

// arrayTerms are t for index i of an array of size tasks.
func arrayTerms(t contract.Terms, i, size int) contract.Terms {
	job := *t.Job
	job.Env = maps.Clone(job.Env)
	if job.Env == nil {
		job.Env = map[string]string{}
	}
	job.Env[process.ArrayIndexEnv] = strconv.Itoa(i)
	job.Env[process.ArraySizeEnv] = strconv.Itoa(size)
	t.Job = &job
	return t
}

// printArray prints a line per index, or --json's array.
func (o *offerFlags) printArray(cmd *cobra.Command, f *bidFlags, tasks []arrayTask) error {
	out := cmd.OutOrStdout()
	if f.json {
		for n := range tasks {
			if err := tasks[n].err; err != nil {
				tasks[n].Error = &jsonError{Error: err.Error(), Code: bourse.ErrorCode(err), ExitStatus: exitStatus(err)}
			}
		}
		return f.printJSON(out, tasks)
	}
	first := ""
	for _, k := range tasks {
		switch {
		case k.Contract != nil:
			fmt.Fprintf(out, "%d contract %s with %s\n", k.Index, k.Contract.ID, safe(k.Contract.Server))
			if first == "" {
				first = k.Contract.ID
			}
		case k.Queued != nil:
			fmt.Fprintf(out, "%d waits as %s\n", k.Index, k.Queued.ID)
		default:
			fmt.Fprintf(out, "%d no contract: %s\n", k.Index, errorText(k.err))
		}
	}
	if first != "" {
		bid := f.command(cmd)
		fmt.Fprintf(out, "watch one: %s watch %s; list them: %s contracts\n", bid, first, bid)
	}
	return nil
}

// arrayError is nil if every task made a contract (or waits for one);
// else the worst of their errors, by exit status: a signal's stop, a
// command line that cannot be right, a failure, no answer, then the
// market's no.
func arrayError(ctx context.Context, o *offerFlags, tasks []arrayTask) error {
	var worst *arrayTask
	failed := 0
	for n := range tasks {
		k := &tasks[n]
		if k.made() {
			continue
		}
		failed++
		if worst == nil || arrayRank(exitStatus(k.err)) > arrayRank(exitStatus(worst.err)) {
			worst = k
		}
	}
	if worst == nil {
		return nil
	}
	err := fmt.Errorf("--array %s: %d of %d offers made no contract; index %d: %w", o.array, failed, len(tasks), worst.Index, worst.err)
	if cause := context.Cause(ctx); cause != nil {
		err = fmt.Errorf("--array %s: %d of %d offers made no contract: %w", o.array, failed, len(tasks), cause)
	}
	if s := exitStatus(err); s == exitUnavailable || s >= 128 {
		err = fmt.Errorf("%w; the offers may have gone through: the same command with --request-id %s cannot escrow twice, and offers those that did not", err, o.requestID)
	}
	return err
}

// arrayRank orders exit statuses from the least bad: the market's no,
// no answer (whether the offer went through is not known), a failure, a
// command line that cannot be right, a signal's stop.
func arrayRank(status int) int {
	switch status {
	case exitRefused:
		return 1
	case exitUnavailable:
		return 2
	case exitFailure:
		return 3
	case exitUsage:
		return 4
	}
	return 5
}
