package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"time"

	"github.com/shopspring/decimal"
	"gopkg.in/yaml.v3"

	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/sim/workload"
)

// File is a scenario as its YAML file writes it: the market (servers,
// clients), the policies to compare, the workload and the run's length.
// examples/sim holds two; docs/sim.md describes every field.
type File struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Seeds are the runs' seeds, [1] if empty.
	Seeds []uint64 `yaml:"seeds"`
	// Horizon stops arrivals; Limit stops the run (see sim.Config).
	Horizon      time.Duration `yaml:"horizon"`
	Limit        time.Duration `yaml:"limit"`
	Sample       time.Duration `yaml:"sample"`
	ReadingEvery time.Duration `yaml:"reading_every"`
	// RouteTo is how many servers an offer goes to at most (the
	// exchange's --route-to), exchange.DefaultRouteTo if zero; at least
	// the servers' number routes every offer to all whose asks it meets.
	RouteTo int `yaml:"route_to"`
	// Policies are named server policies; a server's policy may name one,
	// and `bourse sim compare --policy NAME` gives it to every server.
	Policies map[string]server.PolicyConfig `yaml:"policies"`
	Servers  []ServerFile                   `yaml:"servers"`
	Clients  []ClientFile                   `yaml:"clients"`
	// DefaultClient submits the jobs of clients not listed (a trace's
	// users), each under its own id with its own wallet.
	DefaultClient *ClientFile   `yaml:"default_client"`
	Workload      workload.Spec `yaml:"workload"`

	// Dir is the folder of the file, against which the workload's trace
	// path is read.
	Dir string `yaml:"-"`
}

// ServerFile is a kind of server and how many of it there are.
type ServerFile struct {
	ID        string `yaml:"id"`
	Model     string `yaml:"model"`
	MemoryMiB int    `yaml:"memory_mib"`
	GPUs      int    `yaml:"gpus"`
	// Replicas makes that many servers id-1..id-N, 1 if zero.
	Replicas int       `yaml:"replicas"`
	Policy   PolicyRef `yaml:"policy"`
}

// PolicyRef is a server's policy: the name of one of the file's policies,
// or one written out.
type PolicyRef struct {
	Name   string
	Inline *server.PolicyConfig
}

// strictAs is what Parse checks a written-out policy's keys against.
func (*PolicyRef) strictAs() reflect.Type { return reflect.TypeFor[server.PolicyConfig]() }

func (p *PolicyRef) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&p.Name)
	}
	p.Inline = new(server.PolicyConfig)
	return n.Decode(p.Inline)
}

// ClientFile is a bidding client.
type ClientFile struct {
	ID     string          `yaml:"id"`
	Budget decimal.Decimal `yaml:"budget"`
	// Value is what a GPU-second of its jobs' use is worth to it.
	Value    decimal.Decimal `yaml:"value"`
	Strategy StrategyRef     `yaml:"strategy"`
	Patience time.Duration   `yaml:"patience"`
	// Allowance pays the wallet a per hour and decays it by b per hour
	// (dx/dt = a − b·x), every period (an hour).
	Allowance *Allowance `yaml:"allowance"`
}

// StrategyRef is a client's strategy: its kind alone (fixed, cheapest,
// adaptive, deadline) or its kind with parameters.
type StrategyRef struct {
	Kind   string          `yaml:"kind"`
	Start  decimal.Decimal `yaml:"start"`  // cheapest: opening share of the value
	Step   decimal.Decimal `yaml:"step"`   // adaptive: rise per rejection
	Base   decimal.Decimal `yaml:"base"`   // deadline: opening share
	Window time.Duration   `yaml:"window"` // deadline: how long the price rises
	Slack  float64         `yaml:"slack"`  // time limit = run time · slack
}

// strictAs is what Parse checks a strategy's keys against.
func (*StrategyRef) strictAs() reflect.Type { return reflect.TypeFor[strategyFields]() }

func (s *StrategyRef) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&s.Kind)
	}
	var f strategyFields
	if err := n.Decode(&f); err != nil {
		return err
	}
	*s = StrategyRef(f)
	return nil
}

// strategyFields is StrategyRef without its decoder, to decode into.
type strategyFields StrategyRef

// Load reads and checks a scenario file.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	f, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	f.Dir = filepath.Dir(path)
	return f, nil
}

// Parse reads a scenario from YAML, strictly: unknown or repeated keys,
// values of the wrong type and settings that make no sense are errors
// that give the line (name is the file's, for the messages).
func Parse(data []byte, name string) (*File, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, &LineError{File: name, Err: err}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &LineError{File: name, Line: extra.Line, Err: errors.New("one scenario per file: a second document starts here")}
	}
	if err := strict(&root, reflect.TypeFor[File](), ""); err != nil {
		return nil, located(name, &root, err)
	}
	var f File
	if err := root.Decode(&f); err != nil {
		return nil, &LineError{File: name, Err: err}
	}
	if err := f.check(); err != nil {
		return nil, located(name, &root, err)
	}
	if err := f.feasible(); err != nil {
		return nil, located(name, &root, err)
	}
	return &f, nil
}

// fileName is what a scenario's and its policies' names may be.
var fileName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*$`)

// check finds what decoding cannot: missing and impossible settings.
func (f *File) check() error {
	if f.Name == "" {
		return fieldErr("name", "a scenario needs a name (it titles the report)")
	}
	// Names become file names: the report's folder, the contract logs.
	if !fileName.MatchString(f.Name) {
		return fieldErr("name", "%q: want letters, digits, '.', '_' or '-' (it names the report's folder)", f.Name)
	}
	if err := f.checkRun(); err != nil {
		return err
	}
	for _, name := range f.PolicyNames() {
		p := f.Policies[name]
		if !fileName.MatchString(name) {
			return fieldErr("policies", "%q: want letters, digits, '.', '_' or '-' (it names the policy's files)", name)
		}
		if err := checkPolicy("policies."+name, p); err != nil {
			return err
		}
		if _, err := p.Build(); err != nil {
			return fieldErr("policies."+name, "%v", err)
		}
	}
	if len(f.Servers) == 0 {
		return fieldErr("servers", "a scenario needs servers")
	}
	ids := map[string]bool{}
	servers, gpus := 0, 0
	for i, s := range f.Servers {
		at := fmt.Sprintf("servers[%d]", i)
		switch {
		case s.ID == "":
			return fieldErr(at+".id", "every server needs an id")
		case ids[s.ID]:
			return fieldErr(at+".id", "%q is another server's id", s.ID)
		case s.GPUs < 1:
			return fieldErr(at+".gpus", "a server needs at least one GPU")
		}
		if err := firstErr(bGPUs.whole(at+".gpus", s.GPUs), bReplicas.whole(at+".replicas", s.Replicas), bMemory.whole(at+".memory_mib", s.MemoryMiB)); err != nil {
			return err
		}
		servers += max(1, s.Replicas)
		gpus += max(1, s.Replicas) * s.GPUs
		if servers > int(bServers.max) {
			return fieldErr(at+".replicas", "the servers add up to %d with these: want %s", servers, bServers.want())
		}
		if gpus > int(bAllGPUs.max) {
			return fieldErr(at+".gpus", "the GPUs add up to %d with these: want %s", gpus, bAllGPUs.want())
		}
		ids[s.ID] = true
		if s.Policy.Inline != nil {
			if err := checkPolicy(at+".policy", *s.Policy.Inline); err != nil {
				return err
			}
		}
		if _, err := f.policy(s.Policy, ""); err != nil {
			return fieldErr(at+".policy", "%v", err)
		}
	}
	clients := map[string]bool{}
	for i, c := range f.Clients {
		at := fmt.Sprintf("clients[%d]", i)
		if c.ID == "" {
			return fieldErr(at+".id", "every client needs an id")
		}
		if clients[c.ID] {
			return fieldErr(at+".id", "%q is another client's id", c.ID)
		}
		clients[c.ID] = true
		if err := c.check(at); err != nil {
			return err
		}
	}
	if f.DefaultClient != nil {
		if err := f.DefaultClient.check("default_client"); err != nil {
			return err
		}
	}
	if len(f.Clients) == 0 && f.DefaultClient == nil {
		return fieldErr("clients", "a scenario needs clients, or a default_client for the workload's")
	}
	if err := f.Workload.Validate(); err != nil {
		var fe *workload.FieldError
		if errors.As(err, &fe) {
			return fieldErr("workload."+fe.Path, "%v", fe.Err)
		}
		return fieldErr("workload", "%v", err)
	}
	return nil
}

func (c ClientFile) check(at string) error {
	switch {
	case c.Budget.Sign() < 0:
		return fieldErr(at+".budget", "negative")
	case c.Value.Sign() <= 0:
		return fieldErr(at+".value", "a client needs a positive value per GPU-second")
	case c.Patience < 0:
		return fieldErr(at+".patience", "negative")
	case c.Allowance != nil && (c.Allowance.A.IsNegative() || c.Allowance.B.IsNegative() || c.Allowance.Period < 0):
		return fieldErr(at+".allowance", "a, b and period must not be negative")
	case c.Allowance != nil && c.Allowance.A.IsZero() && c.Allowance.B.IsZero():
		return fieldErr(at+".allowance", "a and b are both zero: it does nothing")
	}
	errs := []error{bBudget.money(at+".budget", c.Budget), bValue.money(at+".value", c.Value), bPatience.duration(at+".patience", c.Patience)}
	if a := c.Allowance; a != nil {
		errs = append(errs, bAllowanceA.money(at+".allowance.a", a.A), bAllowanceB.money(at+".allowance.b", a.B), bPeriod.duration(at+".allowance.period", a.Period))
	}
	s := c.Strategy
	errs = append(errs, bStart.money(at+".strategy.start", s.Start), bStep.money(at+".strategy.step", s.Step), bBase.money(at+".strategy.base", s.Base),
		bWindow.duration(at+".strategy.window", s.Window), bSlack.number(at+".strategy.slack", s.Slack))
	if err := firstErr(errs...); err != nil {
		return err
	}
	if _, err := c.Strategy.Build(); err != nil {
		return fieldErr(at+".strategy", "%v", err)
	}
	return nil
}

// checkRun checks the run's settings: its seeds, times and samples.
func (f *File) checkRun() error {
	for _, d := range []struct {
		path string
		v    time.Duration
	}{{"horizon", f.Horizon}, {"limit", f.Limit}, {"sample", f.Sample}, {"reading_every", f.ReadingEvery}} {
		if d.v < 0 {
			return fieldErr(d.path, "%v is negative", d.v)
		}
	}
	err := firstErr(bSeeds.whole("seeds", len(f.Seeds)), bHorizon.duration("horizon", f.Horizon), bLimit.duration("limit", f.Limit),
		bSample.duration("sample", f.Sample), bReadingEvery.duration("reading_every", f.ReadingEvery),
		bRouteTo.whole("route_to", f.RouteTo))
	if err != nil {
		return err
	}
	// The series holds a point a sample for the whole run: sim.Config's
	// defaults say how long that is.
	length, sample := f.Limit, f.Sample
	if length == 0 {
		length = year
		if f.Horizon > 0 {
			length = f.Horizon + 30*24*time.Hour
		}
	}
	if sample == 0 {
		sample = time.Hour
	}
	if n := length / sample; n > time.Duration(bSamples.max) {
		return fieldErr("sample", "%v makes %d samples in a run of %v: at most %d (raise sample, or set limit)", sample, n, length, int(bSamples.max))
	}
	return nil
}

// checkPolicy checks a policy's numbers; Build checks its curves.
func checkPolicy(at string, p server.PolicyConfig) error {
	errs := []error{
		bPolicyTime.duration(at+".max_time_limit", p.MaxTimeLimit), bPolicyTime.duration(at+".counter_ttl", p.CounterTTL),
		bPolicyTime.duration(at+".fair_use.min_time_limit", p.FairUse.MinTimeLimit), bPolicyTime.duration(at+".fair_use.max_time_limit", p.FairUse.MaxTimeLimit),
		bPolicyTime.duration(at+".fair_use.cooldown", p.FairUse.Cooldown), bMaxRunning.whole(at+".fair_use.max_running", p.FairUse.MaxRunning),
	}
	if p.Bookings != nil {
		errs = append(errs, bPolicyTime.duration(at+".bookings.max_ahead", p.Bookings.MaxAhead))
	}
	if k, err := decimal.NewFromString(p.K); err == nil {
		errs = append(errs, bK.money(at+".k", k))
	}
	errs = append(errs, bLevels.whole(at+".levels", p.Levels), bEpoch.duration(at+".epoch", p.Epoch), bMaxEpoch.duration(at+".max_epoch", p.MaxEpoch))
	for _, m := range []struct{ name, v string }{{"floor", p.Floor}, {"ceiling", p.Ceiling}} {
		if d, err := decimal.NewFromString(m.v); err == nil {
			errs = append(errs, bFloor.money(at+"."+m.name, d))
		}
	}
	return firstErr(errs...)
}

// PolicyNames lists the file's named policies, sorted.
func (f *File) PolicyNames() []string { return slices.Sorted(maps.Keys(f.Policies)) }

// policy builds a server's policy; override, if set, names the policy
// every server gets instead.
func (f *File) policy(ref PolicyRef, override string) (server.Policy, error) {
	name := ref.Name
	if override != "" {
		name = override
	}
	if name == "" {
		if ref.Inline == nil {
			return nil, errors.New("a server needs a policy: a name from policies, or one written out")
		}
		return ref.Inline.Build()
	}
	p, ok := f.Policies[name]
	if !ok {
		return nil, fmt.Errorf("no policy %q in policies (there are: %v)", name, f.PolicyNames())
	}
	return p.Build()
}

// Market builds the servers and clients of the scenario, each server with
// its own policy, or with the named policy if override is set.
func (f *File) Market(override string) (servers []ServerSpec, clients []ClientSpec, def *ClientSpec, err error) {
	for _, s := range f.Servers {
		pol, err := f.policy(s.Policy, override)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("server %s: %w", s.ID, err)
		}
		n := max(1, s.Replicas)
		for i := range n {
			id := s.ID
			if n > 1 {
				id = fmt.Sprintf("%s-%d", s.ID, i+1)
			}
			servers = append(servers, ServerSpec{ID: id, Model: s.Model, MemoryMiB: s.MemoryMiB, Count: s.GPUs, Policy: pol})
		}
	}
	for _, c := range f.Clients {
		spec, err := c.spec()
		if err != nil {
			return nil, nil, nil, err
		}
		clients = append(clients, spec)
	}
	if f.DefaultClient != nil {
		spec, err := f.DefaultClient.spec()
		if err != nil {
			return nil, nil, nil, err
		}
		def = &spec
	}
	return servers, clients, def, nil
}

func (c ClientFile) spec() (ClientSpec, error) {
	s, err := c.Strategy.Build()
	if err != nil {
		return ClientSpec{}, fmt.Errorf("client %s: %w", c.ID, err)
	}
	return ClientSpec{ID: c.ID, Budget: c.Budget, Value: c.Value, Strategy: s, Patience: c.Patience, Allowance: c.Allowance}, nil
}
