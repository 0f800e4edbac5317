package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// offerFlags shape an offer's terms; `offer` and `resume` share them.
type offerFlags struct {
	gpus        int
	model       string
	minMemory   int
	timeLimit   time.Duration
	prepayment  string
	price       string
	p, q        string
	preemptible bool
	server      string
	utilization string
	duration    time.Duration
	image       string
	command     string
	args        []string
	export      []string // the job's variables, NAME=VALUE or NAME (--export)
	files       string   // a folder to pack and put for the job (--files)
	filesMax    int64
	scale       int32
	requestID   string
	file        string
	take        string
	array       string // --array's SPEC; indexes and throttle, what it says once checked
	indexes     []int
	throttle    int
	inFlight    int

	wait time.Duration

	auto     string
	value    string
	deadline string
	rounds   int

	// scales learns the currency's scale from the exchange, for the
	// default prepayment (unless --scale gives it) and for printing.
	scales *scales
}

// termFlags are the flags that shape terms, which -f replaces.
var termFlags = []string{"gpus", "model", "min-memory", "time-limit", "price", "p", "q", "preemptible",
	"utilization", "duration", "image", "command", "arg", "export"}

func (o *offerFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&o.gpus, "gpus", 1, "GPUs wanted")
	fs.StringVar(&o.model, "model", "", "GPU model, e.g. H100 (default any)")
	fs.IntVar(&o.minMemory, "min-memory", 0, "least memory per GPU, MiB")
	fs.DurationVar(&o.timeLimit, "time-limit", 10*time.Minute, "wall-clock limit of the job")
	fs.StringVar(&o.prepayment, "prepayment", "", "amount to escrow, at most the maximum charge (default: the maximum charge, full use for the whole time limit)")
	fs.StringVar(&o.price, "price", "", "flat price per GPU-second of use, e.g. 0.30")
	fs.StringVar(&o.p, "p", "", "price per GPU-second by rate of use, as x:y breakpoints: '0.5:0,2:0.004'")
	fs.StringVar(&o.q, "q", "", "price per second by guaranteed GPUs, as x:y breakpoints (default none)")
	fs.BoolVar(&o.preemptible, "preemptible", false, "let the server suspend the job for a guaranteed one")
	fs.StringVar(&o.server, "server", "", "offer to this server only")
	fs.StringVar(&o.utilization, "utilization", "1", "synthetic job: busy fraction of each GPU, 0..1")
	fs.DurationVar(&o.duration, "duration", 0, "synthetic job: how long it runs (default: the time limit)")
	fs.StringVar(&o.image, "image", "", "a container image the job runs in, REGISTRY/REPOSITORY[:TAG][@DIGEST] (servers that run containers and pull from its registry)")
	fs.StringVar(&o.command, "command", "", "a real job: the command the server runs (instead of a synthetic one); with --image, the image's program to run in place of its entrypoint")
	fs.StringArrayVar(&o.args, "arg", nil, "an argument of --command, or with --image alone of the image's entrypoint (repeat for more)")
	fs.StringArrayVar(&o.export, "export", nil, "a variable of the job's environment (with --command or --image), as Slurm's --export: NAME=VALUE, or NAME for its value here (repeat for more); a server sets only those its allow_env allows, and refuses the offer otherwise")
	fs.StringVar(&o.files, "files", "", "a folder of your files for the job (with --command or --image): packed, put where only its server may fetch it, unpacked in its working folder before it starts")
	fs.Int64Var(&o.filesMax, "files-max-bytes", bidder.DefaultFilesBytes, "the most bytes --files may pack to (servers and the exchange have their own limits: bid servers shows them)")
	fs.Int32Var(&o.scale, "scale", 2, "decimal places of the currency, for the default prepayment (default: the exchange says)")
	fs.StringVar(&o.requestID, "request-id", "", "makes the offer idempotent: the same id never escrows twice (default: generated)")
	fs.StringVarP(&o.file, "file", "f", "", "read the terms from a JSON or YAML file (docs/pricing.md has the form)")
	fs.DurationVar(&o.wait, "wait", 0, "if no server accepts at once, wait in the book up to this long (at most 168h) for GPUs to free up")
	fs.StringVar(&o.take, "take", "", "take a counter-offer as shown last: its number N or its ID; or, with the offer's terms, offer them to server NAME alone and take its cheapest counter-offer")
}

// terms builds the terms from the flags on base: every flag for a new
// offer, only those given for a resume (which starts from the suspended
// contract's terms); the prepayment by default the most they can cost,
// at the currency's scale.
func (o *offerFlags) terms(fs *pflag.FlagSet, base contract.Terms, resume bool) (contract.Terms, error) {
	t, err := o.shape(fs, base, resume)
	if err != nil {
		return t, err
	}
	if !fs.Changed("scale") && o.scales != nil {
		if scale, ok := o.scales.of(t.Currency); ok {
			o.scale = scale
		}
	}
	p, err := o.prepaymentFlag()
	if err != nil {
		return t, err
	}
	if p.IsPositive() {
		t.Prepayment = p
	}
	named := t.Prepayment.IsPositive()
	if t.Prepayment.Sign() >= 0 { // a file's negative one goes to the exchange to be refused
		t.Prepayment = t.CappedPrepayment(o.scale)
	}
	if !named && t.Prepayment.IsZero() && t.P != nil {
		// The exchange would refuse "terms.prepayment: 0" as if the
		// user had written it: say where the 0 came from.
		return t, &bourse.Error{Code: bourse.EInvalidOffer, Op: "bid.offer", Field: "prepayment",
			Message: fmt.Sprintf("the default prepayment, the most this offer can cost (%d GPU(s) busy for the whole %s at %s), rounds down to 0 at the currency's %d decimal places: raise --price or --time-limit, or give --prepayment",
				t.GPUs, t.TimeLimit, secondText(t), o.scale)}
	}
	return t, nil
}

// shape builds the terms from the flags on base, all but the prepayment:
// what check holds to the offer's rules before anything connects.
func (o *offerFlags) shape(fs *pflag.FlagSet, base contract.Terms, resume bool) (contract.Terms, error) {
	t := base
	set := func(name string) bool { return !resume || fs.Changed(name) }
	if o.file != "" {
		for _, name := range termFlags {
			if fs.Changed(name) {
				return t, usagef("-f %s gives the terms: drop --%s, or drop -f", o.file, name)
			}
		}
		var err error
		if t, err = readTerms(o.file); err != nil {
			return t, err
		}
		if t.Currency == "" {
			t.Currency = base.Currency
		}
	} else {
		if set("gpus") {
			t.GPUs = o.gpus
		}
		if set("model") || set("min-memory") {
			t.Class = contract.Class{Model: o.model, MinMemoryMiB: o.minMemory}
		}
		if set("time-limit") {
			t.TimeLimit = o.timeLimit
		}
		if set("preemptible") {
			t.Preemptible = o.preemptible
		}
		switch {
		case o.price != "" && o.p != "":
			return t, usagef("give --price or --p, not both")
		case o.price != "":
			d, err := amount("--price", o.price)
			if err != nil {
				return t, err
			}
			t.P = contract.Flat(d)
		case o.p != "":
			c, err := parseCurve("--p", o.p)
			if err != nil {
				return t, err
			}
			t.P = c
		case !resume && o.auto == "":
			return t, usagef("say what you pay: --price 0.30 (per GPU-second), or a curve with --p, or --auto STRATEGY --value V")
		}
		if o.q != "" {
			c, err := parseCurve("--q", o.q)
			if err != nil {
				return t, err
			}
			t.Q = c
		}
		if set("image") || set("command") || set("arg") || set("export") || set("utilization") || set("duration") || t.Job == nil {
			job, err := o.job(t.TimeLimit)
			if err != nil {
				return t, err
			}
			t.Job = job
		}
	}
	if fs.Changed("server") {
		t.Server = o.server
	}
	return t, nil
}

// prepaymentFlag is --prepayment, zero if not given: escrow the maximum
// charge. More than the maximum charge escrows the maximum charge.
func (o *offerFlags) prepaymentFlag() (decimal.Decimal, error) {
	if o.prepayment == "" {
		return decimal.Zero, nil
	}
	d, err := amount("--prepayment", o.prepayment)
	if err != nil {
		return d, err
	}
	if !d.IsPositive() {
		return d, usagef("--prepayment %s: want more than 0, or leave it out to escrow the maximum charge", d)
	}
	return d, nil
}

func (o *offerFlags) job(timeLimit time.Duration) (*contract.JobSpec, error) {
	if o.image != "" || o.command != "" {
		env, err := exportVars(o.export, os.LookupEnv)
		if err != nil {
			return nil, err
		}
		// With an image, --command replaces its entrypoint and --arg its
		// command, as docker run's --entrypoint and arguments do.
		return &contract.JobSpec{Image: o.image, Command: o.command, Args: o.args, Env: env}, nil
	}
	if len(o.args) > 0 {
		return nil, usagef("--arg needs --command or --image")
	}
	if len(o.export) > 0 {
		return nil, usagef("--export needs --command or --image: a synthetic job has no environment")
	}
	u, err := amount("--utilization", o.utilization)
	if err != nil {
		return nil, err
	}
	d := o.duration
	if d <= 0 {
		d = timeLimit
	}
	return &contract.JobSpec{Profile: &contract.Profile{Utilization: u, Duration: d}}, nil
}

// exportVars reads --export's NAME=VALUE (or NAME, whose value lookup
// gives: this shell's) into a job's variables. Only what is named goes:
// unlike Slurm's default, nothing of this shell's environment is sent
// unasked, since it may hold credentials.
func exportVars(export []string, lookup func(string) (string, bool)) (map[string]string, error) {
	if len(export) == 0 {
		return nil, nil
	}
	env := map[string]string{}
	for _, e := range export {
		name, value, given := strings.Cut(e, "=")
		if name == "" || strings.ContainsRune(e, 0) {
			return nil, usagef("--export %q: want NAME=VALUE, or NAME for its value here", e)
		}
		if !given {
			v, ok := lookup(name)
			if !ok {
				return nil, usagef("--export %s: %s is not set here; give --export %s=VALUE", name, name, name)
			}
			value = v
		}
		if _, twice := env[name]; twice {
			return nil, usagef("--export %s: given twice", name)
		}
		env[name] = value
	}
	return env, nil
}

// parseCurve reads "x:y,x:y" breakpoints.
func parseCurve(flag, s string) (contract.Curve, error) {
	var c contract.Curve
	for i, pair := range strings.Split(s, ",") {
		x, y, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if !ok {
			return nil, usagef("%s: breakpoint %d %q is not x:y, like 0.5:0.004", flag, i+1, pair)
		}
		var p contract.Point
		var err error
		if p.X, err = amount(flag+" x", x); err != nil {
			return nil, err
		}
		if p.Y, err = amount(flag+" y", y); err != nil {
			return nil, err
		}
		c = append(c, p)
	}
	if err := c.Validate(); err != nil {
		return nil, &usageError{fmt.Errorf("%s: %w", flag, err)}
	}
	return c, nil
}

func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "cli-" + hex.EncodeToString(b)
}

func newBidOfferCmd(f *bidFlags) *cobra.Command {
	o := &offerFlags{}
	cmd := &cobra.Command{
		Use:   "offer",
		Short: "Make an offer: get a contract, or counter-offers to take",
		Long: `offer makes an offer from flags or a file (-f, JSON or YAML in the form of
docs/pricing.md). The answer is a contract, whose prepayment is now escrowed,
or the servers' counter-offers: they print as a table, numbered by price
per GPU-second at full use, cheapest first (ties by server, then id), each
with its id, and on a terminal you are asked which to take. An offer that
ends without a contract exits with status 3 (code rejected).

The counter-offers shown last (here or by quote, as a table or JSON) can be
taken afterwards, as shown, while they are valid: offer --take N takes the
N-th, offer --take ID the one of that id (or the start of it); no new offer
is made. With an offer's terms, --take SERVER offers them to that server
alone and takes its cheapest counter-offer: the contract, if any, is with
SERVER.
With --auto STRATEGY and --value, a bidding strategy offers and takes
counter-offers for you until it has a contract or gives up:

  fixed      offers the value and never takes a counter-offer
  cheapest   opens at half the value, takes the cheapest counter within it
  adaptive   opens low and raises its price after each rejection
  deadline   pays more as --deadline nears, the whole value at the end
  going      bids the median price of the contracts made lately (bourse
             market), within the value, and a quarter of the way to the
             value more after each rejection

With --wait 2h an offer that no server accepts at once waits in the
exchange's book, best price first, for GPUs to free up: it prints where it
stands, holds no money while it waits (the prepayment is escrowed at the
match, from your balance then), and becomes a contract when a server
accepts it. Follow it with watch ID, list them with waiting, take one out
with cancel ID.

A real job (--command, or --image) may bring your files: --files DIR packs
the folder (at most --files-max-bytes), puts it into your own bucket on
the exchange's NATS, where no other client can read it and only your
contract's server is handed it, and names it in the terms by its digest.
The server fetches exactly that, checks it and unpacks it into the job's
working folder before the job starts (time not charged); files it cannot
fetch or unpack start nothing, the job's logs say why, and the contract
is voided. Your files go when no contract of yours needs them. --export
NAME=VALUE (or NAME, its value here; repeat) sets a variable of its
environment, as Slurm's --export; only what you name goes, and a server
sets only those its allow_env allows (permission_denied otherwise).

Every offer has a request id (--request-id, generated if not given): making
the same offer again with the same id returns the same contract and never
escrows twice, so a timed-out offer is safe to retry.

--array SPEC makes a job array, as Slurm's sbatch --array: the same offer
once per index, each a contract of its own, whose job (--command or
--image) finds its index in $BOURSE_ARRAY_INDEX and the number of indexes
in $BOURSE_ARRAY_SIZE (servers set these two whatever their allow_env
says). SPEC is N, the indexes 0 to N-1, or a comma list of indexes,
ranges and stepped ranges: 0-9,20 or 0-99:5 (0, 5, … 95); at most 1000
tasks, indexes 0 to 99999; 7-7 is index 7 alone. The offers go
--in-flight at a time (4 by default), in the indexes' order. A final %N
throttles the array, as Slurm's: at most N of its contracts (or waiting
offers, with --wait) live at once; the command sends the next offer as
one of them settles or is voided, so it runs until the last index is
offered. Each offer's request id is ID/INDEX, so the same command again
escrows nothing twice. It prints a line per index, in the indexes'
order (its contract, or why none; --json an array), and exits 0 only if
every index made a contract (or, with --wait, waits for one); else with
the worst status of them (1, then 4, then 3). An array takes no
counter-offer (no --take) and does not negotiate (no --auto).`,
		Args: cobra.NoArgs,
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, _ []string) error {
			o.scales = newScales(ctx, c)
			if o.take != "" && o.takesShown(cmd.Flags()) {
				return o.takeShown(ctx, cmd, f, c, "")
			}
			base := contract.Terms{Currency: f.currency}
			t, err := o.terms(cmd.Flags(), base, false)
			if err != nil {
				return err
			}
			if err := o.pin(cmd.Flags(), &t); err != nil {
				return err
			}
			if err := o.putFiles(ctx, c, &t); err != nil {
				return err
			}
			if o.requestID == "" {
				o.requestID = newRequestID()
			}
			if o.indexes != nil {
				return o.offerArray(ctx, cmd, f, c, t)
			}
			if o.auto != "" {
				return o.negotiate(ctx, cmd, f, c, t)
			}
			reply, err := c.OfferWait(ctx, o.requestID, t, o.wait)
			return o.answer(ctx, cmd, f, c, reply, "", retryHint(err, o.requestID))
		}),
	}
	o.register(cmd.Flags())
	o.checkBefore(cmd, false)
	cmd.Flags().StringVar(&o.auto, "auto", "", "bid with a strategy: fixed, cheapest, adaptive, deadline or going")
	cmd.Flags().StringVar(&o.value, "value", "", "with --auto: the most a GPU-second of use is worth to you")
	cmd.Flags().StringVar(&o.deadline, "deadline", "", "with --auto deadline: when the job must be done, as a duration from now (45m) or a time (RFC 3339)")
	cmd.Flags().IntVar(&o.rounds, "rounds", 6, "with --auto: offers before giving up")
	cmd.Flags().StringVar(&o.array, "array", "", fmt.Sprintf("a job array, as Slurm's sbatch --array: the same offer once per index, its job told $BOURSE_ARRAY_INDEX and $BOURSE_ARRAY_SIZE; `SPEC` is N (0 to N-1) or a list of indexes and ranges, e.g. 0-9,20 or 0-99:5 (step 5), and %%N after it for at most N of its contracts live at once (at most %d tasks, indexes 0 to %d)", maxArrayTasks, maxArrayIndex))
	cmd.Flags().IntVar(&o.inFlight, "in-flight", bidder.DefaultInFlight, fmt.Sprintf("with --array: how many of its offers are in negotiation at once (1 to %d)", maxInFlight))
	return cmd
}

func newBidResumeCmd(f *bidFlags) *cobra.Command {
	o := &offerFlags{}
	cmd := &cobra.Command{
		Use:   "resume ID",
		Short: "Resume a suspended contract's job under a new offer",
		Long: `resume offers new terms for the job of a suspended (or preempted) contract.
The terms start as the suspended contract's, server included; the offer flags
change them (e.g. --price, --time-limit, --server). The suspended contract's
files are kept for its resume, within the exchange's age limit for files
(24 h by default); --files DIR puts a folder again, or another.`,
		Args: cobra.ExactArgs(1),
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, args []string) error {
			o.scales = newScales(ctx, c)
			if o.take != "" && o.takesShown(cmd.Flags()) {
				return o.takeShown(ctx, cmd, f, c, args[0])
			}
			old, err := c.Contract(ctx, args[0])
			if err != nil {
				return err
			}
			base := old.Terms
			base.Client = ""
			t, err := o.terms(cmd.Flags(), base, true)
			if err != nil {
				return err
			}
			if err := o.pin(cmd.Flags(), &t); err != nil {
				return err
			}
			if err := o.putFiles(ctx, c, &t); err != nil {
				return err
			}
			if o.requestID == "" {
				o.requestID = newRequestID()
			}
			reply, err := c.Resume(ctx, o.requestID, old.ID, t)
			return o.answer(ctx, cmd, f, c, reply, old.ID, retryHint(err, o.requestID))
		}),
	}
	o.register(cmd.Flags())
	o.checkBefore(cmd, true)
	return cmd
}

// putFiles packs --files and puts it where the job's server will fetch
// it, and names it in t's job, which must run a program or an image.
func (o *offerFlags) putFiles(ctx context.Context, c *bidder.Client, t *contract.Terms) error {
	if o.files == "" {
		return nil
	}
	if t.Job == nil || (t.Job.Command == "" && t.Job.Image == "") {
		return usagef("--files are for a program or an image to work on: give --command or --image")
	}
	f, err := c.PutFiles(ctx, o.files, o.filesMax)
	if err != nil {
		return err
	}
	job := *t.Job
	job.Files = &f
	t.Job = &job
	return nil
}

// retryHint tells how to retry an offer that got no answer without
// escrowing twice.
func retryHint(err error, requestID string) error {
	switch bourse.ErrorCode(err) {
	case bourse.EUnavailable, bourse.EDeadlineExceeded:
		return fmt.Errorf("%w; the offer may have gone through: offering again with --request-id %s cannot escrow twice", err, requestID)
	}
	return err
}

// pin makes --take SERVER's offer go to SERVER alone, so that it makes a
// contract with SERVER or none: an accept from another server would be
// a contract with another.
func (o *offerFlags) pin(fs *pflag.FlagSet, t *contract.Terms) error {
	if o.take == "" {
		return nil
	}
	if fs.Changed("server") && o.server != o.take {
		return usagef("--take %s and --server %s name different servers: keep one", o.take, o.server)
	}
	t.Server = o.take
	return nil
}

// answer prints an offer's reply: the contract, or the counter-offers and,
// if the user picks one, the contract of taking it. resumes is the
// contract the offer resumes, if it does.
func (o *offerFlags) answer(ctx context.Context, cmd *cobra.Command, f *bidFlags, c *bidder.Client, reply protocol.OfferReply, resumes string, err error) error {
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if reply.Contract != nil {
		if f.json {
			return f.printJSON(out, reply)
		}
		printContract(out, *reply.Contract, o.scales, f.command(cmd))
		return nil
	}
	if reply.Queued != nil {
		if f.json {
			return f.printJSON(out, reply)
		}
		printQueued(out, *reply.Queued, f.command(cmd))
		return nil
	}
	if len(reply.Counters) == 0 {
		if f.json {
			_ = f.printJSON(out, reply)
		}
		return rejected(reply.Rejections)
	}
	n, err := o.choose(cmd, f, reply, resumes)
	if err != nil {
		return err
	}
	got, err := c.TakeResume(ctx, o.requestID+"-take", resumes, reply.Counters[n-1])
	if err != nil {
		return retryHint(err, o.requestID)
	}
	if got.Contract == nil {
		if f.json {
			_ = f.printJSON(out, got)
		}
		return &bourse.Error{Code: bourse.ERejected, Op: "bid.offer", Message: fmt.Sprintf("counter-offer %d (%s's) was not honoured: offer again", n, reply.Counters[n-1].Server)}
	}
	f.took(reply.Counters[n-1].ID, got.Contract.ID)
	if f.json {
		return f.printJSON(out, got)
	}
	printContract(out, *got.Contract, o.scales, f.command(cmd))
	return nil
}

// isTerminal tells a terminal (stdin, or stdout, where a screen may be
// redrawn in place) from a file, a pipe or a buffer.
func isTerminal(std any) bool {
	f, ok := std.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	// /dev/null is a character device too, and where tests and daemons
	// read from.
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}

// printContract tells a new contract, and how to watch it: bid is
// `bourse bid` with the flags that reach the exchange as this client.
func printContract(w io.Writer, k protocol.ContractView, sc *scales, bid string) {
	t := k.Terms
	fmt.Fprintf(w, "contract %s with %s: %d× %s for up to %s at %s; prepayment %s %s escrowed\n",
		k.ID, safe(k.Server), t.GPUs, classText(t.Class), t.TimeLimit, sc.price(t), sc.amount(t.Prepayment, t.Currency), t.Currency)
	if k.Resumes != "" {
		fmt.Fprintf(w, "resumes %s\n", k.Resumes)
	}
	fmt.Fprintf(w, "watch it: %s watch %s\n", bid, k.ID)
}

// classText describes a class of GPUs, its model made safe: a class may
// come in a server's counter-offer.
func classText(c contract.Class) string {
	s := safe(c.Model)
	if s == "" {
		s = "any GPU"
	}
	if c.MinMemoryMiB > 0 {
		s += fmt.Sprintf(" ≥%d MiB", c.MinMemoryMiB)
	}
	return s
}
