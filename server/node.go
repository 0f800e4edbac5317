package server

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// Defaults for the zero values of NodeConfig.
const (
	DefaultEvery    = time.Second
	DefaultClaimFor = 5 * time.Second
)

// NodeConfig configures a Node. ID, Currency and GPUs name the server and
// Runner runs its jobs; the other zero values take the defaults in their
// comments.
type NodeConfig struct {
	ID       string
	Currency currency.Currency // the prices it takes, and the scale of its charges
	GPUs     []contract.GPU
	Policy   Policy // Posted{}, which takes any offer that fits
	// Runner starts the jobs; required, for the node has no clock of its
	// own to give a default one: a Synthetic runner takes the driver's
	// (the agent's wall clock, the simulator's virtual one).
	Runner Runner
	// ReadingEvery is how often a running contract's reading is due, until
	// the exchange says otherwise (Adopt); DefaultEvery.
	ReadingEvery time.Duration
	// ClaimFor is how long an accept claims its GPUs for the exchange's
	// start; DefaultClaimFor.
	ClaimFor time.Duration
	// Files fetches jobs' files (contract.Files) for the Runner: the
	// agent's, through the exchange. nil where there is none (the
	// simulator): a runner then starts no job that has files.
	Files Files
	// NewID names counter-offers; random ones if nil. The simulator
	// passes a deterministic one.
	NewID  func() string
	Logger *slog.Logger // slog.Default()
}

// Node is a GPU server's admission and bookkeeping: it owns the GPUs,
// decides offers with its Policy, claims GPUs for accepts, honours its
// counter-offers, keeps bookings, chooses what to preempt, starts jobs
// through its Runner and says when each job's reading is due and when a
// job must stop. It reads no clock (every method takes now), starts no
// goroutine and does no I/O but what its Runner and the Jobs do; the NATS
// agent (package server/agent) and the simulator drive it. It is safe for
// concurrent use.
type Node struct {
	cfg    NodeConfig
	log    *slog.Logger
	policy Policy
	// observer is the policy's learner, told what happens (observe.go);
	// nil for a policy that does not learn.
	observer Observer
	runner   Runner
	// takes is what the runner says it runs (Describer), for the hello and
	// to refuse other jobs; nil if it does not say.
	takes *protocol.Runs

	mu           sync.Mutex
	readingEvery time.Duration
	closing      bool
	owner        map[int]string // GPU index → "claim <offer>" or "run <contract>"
	claims       map[string]*claim
	counters     map[string]issued
	// countersLapse is when the first of counters lapses; zero if none.
	countersLapse time.Time
	// free caches the GPUs that owner does not hold, for the policy's
	// View: rebuilding it for every offer cost more than deciding.
	free      []contract.GPU
	freeValid bool
	// running caches View.Running likewise: the runs not halted nor
	// claimed, sorted; runsValid is cleared whenever that may change.
	running   []Run
	runsValid bool
	runs      map[string]*run // every run the node remembers, by contract
	active    map[string]*run // the runs whose jobs have not ended
	ids       []string        // Tick's own: the active runs' ids, sorted
	ended     []*run          // ended runs, oldest first, to forget in time
	recent    []contract.Terms
	clients   clientBook
	// bookings are accepted offers for a future slot, by offer, until
	// their jobs start. bookGen counts the changes of the confirmed ones,
	// which a driver keeps on disk (Bookings).
	bookings map[string]*booking
	bookGen  uint64
}

// NewNode checks cfg and fills in its defaults.
func NewNode(cfg NodeConfig) (*Node, error) {
	const op = "server.NewNode"
	if err := protocol.CheckID(cfg.ID); err != nil {
		return nil, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "id", Err: err}
	}
	if err := cfg.Currency.Validate(); err != nil {
		return nil, fmt.Errorf("%s: currency: %w", op, err)
	}
	if len(cfg.GPUs) == 0 {
		return nil, bourse.Errorf(bourse.EInvalid, op, "no GPUs")
	}
	seen := map[int]bool{}
	for _, g := range cfg.GPUs {
		if seen[g.Index] || g.Index < 0 {
			return nil, bourse.Errorf(bourse.EInvalid, op, "GPU index %d is negative or repeated", g.Index)
		}
		seen[g.Index] = true
	}
	if cfg.Policy == nil {
		cfg.Policy = Posted{}
	}
	if v, ok := cfg.Policy.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("%s: policy: %w", op, err)
		}
	}
	if cfg.Runner == nil {
		return nil, bourse.Errorf(bourse.EInvalid, op, "no runner")
	}
	cfg.ReadingEvery = orDefault(cfg.ReadingEvery, DefaultEvery)
	cfg.ClaimFor = orDefault(cfg.ClaimFor, DefaultClaimFor)
	if cfg.NewID == nil {
		cfg.NewID = randomID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.GPUs = slices.Clone(cfg.GPUs)
	slices.SortFunc(cfg.GPUs, func(a, b contract.GPU) int { return a.Index - b.Index })
	var takes *protocol.Runs
	if d, ok := cfg.Runner.(Describer); ok {
		r := d.Runs()
		if err := r.Check(); err != nil {
			return nil, fmt.Errorf("%s: runner: %w", op, err)
		}
		takes = &r
	}
	return &Node{
		cfg: cfg, log: cfg.Logger.With("server", cfg.ID), policy: cfg.Policy, observer: observerOf(cfg.Policy), runner: cfg.Runner, takes: takes,
		readingEvery: cfg.ReadingEvery,
		owner:        map[int]string{},
		claims:       map[string]*claim{},
		counters:     map[string]issued{},
		runs:         map[string]*run{},
		active:       map[string]*run{},
		bookings:     map[string]*booking{},
	}, nil
}

// randomID is a counter-offer's id: 96 random bits, so that no one can
// guess another client's counters.
func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// ID is the server's name.
func (n *Node) ID() string { return n.cfg.ID }

// Currency is the currency the server takes.
func (n *Node) Currency() currency.Currency { return n.cfg.Currency }

// Hello is the body of the server's hello and heartbeats at now.
func (n *Node) Hello(now time.Time) protocol.Hello {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sweep(now)
	scale := n.cfg.Currency.Scale
	h := protocol.Hello{
		Currency: string(n.cfg.Currency.Code),
		Scale:    &scale,
		GPUs:     n.cfg.GPUs,
		Free:     len(n.cfg.GPUs) - len(n.owner),
		At:       now,
	}
	for id := range n.active {
		h.Running = append(h.Running, id)
	}
	slices.Sort(h.Running)
	if s, ok := n.policy.(fmt.Stringer); ok {
		h.Policy = s.String()
	}
	if n.takes != nil {
		r := *n.takes
		h.Runs = &r
	}
	h.Ask = n.ask(now)
	if !n.slotFree(0) {
		// Free GPUs with no job user to run a job on them are no room.
		h.Free = 0
		for i := range h.Ask.Classes {
			h.Ask.Classes[i].Free = 0
		}
	}
	return h
}

// slotFree says whether the runner has a slot for one more job (Slotted),
// beyond those that accepts claimed and have not started, once preempting
// victims end: true where it does not limit them. n.mu is held.
func (n *Node) slotFree(victims int) bool {
	s, ok := n.runner.(Slotted)
	if !ok {
		return true
	}
	free, limited := s.FreeSlots()
	return !limited || free+victims-len(n.claims) > 0
}

// Adopt takes the reading interval the exchange asks for in its answer to
// a hello.
func (n *Node) Adopt(r protocol.HelloReply) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r.ReadingEvery > 0 {
		n.readingEvery = time.Duration(r.ReadingEvery)
	}
}

// ReadingEvery is how often a running contract's reading is due.
func (n *Node) ReadingEvery() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.readingEvery
}

// Close stops the node taking offers and starts, and halts every job with
// reason shutdown: the next Tick asks for them to be stopped.
func (n *Node) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closing = true
	for _, r := range n.runs {
		r.stop(contract.ReasonShutdown)
	}
	n.runsValid = false
}

// Running counts the jobs that have not ended.
func (n *Node) Running() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.active)
}

// scaleOf knows one currency, the server's: offers in others are invalid
// here.
func (n *Node) scaleOf(code string) (int32, bool) {
	return n.cfg.Currency.Scale, code == string(n.cfg.Currency.Code)
}
