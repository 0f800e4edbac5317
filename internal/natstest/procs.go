package natstest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Procs is nats-server processes on loopback, each node configured by a
// file as docs/operations.md says, with the JetStream store on the
// command line (-sd): a cluster (StartProcs), or one node (StartNode).
// Unlike Cluster, a node can be killed (SIGKILL) as an operator's machine
// dies, not only shut down. A node that exits unasked (a crash, a fatal
// error) fails the test with its log.
type Procs struct {
	t     testing.TB
	bin   string
	conf  func(port int) string // StartNode's, for Aside
	net   *netns                // StartProcsApart's
	Nodes []*Proc
}

// Proc is one node of Procs.
type Proc struct {
	Name        string
	Port        int // clients
	ClusterPort int // routes
	index       int // in Procs.Nodes
	conf, store string
	log         string
	cmd         *exec.Cmd
	exited      chan struct{}
	asked       *atomic.Bool // the test stopped this run of the node
}

// URL is the node's client URL.
func (p *Proc) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", p.Port) }

// Pid is the node's process id, while it runs (for a benchmark to weigh
// its CPU).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Running reports whether the node's process runs.
func (p *Proc) Running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// StartProcs starts n nats-server processes in one cluster ("bourse")
// with JetStream, built from the nats-server module this module requires
// (NATSServer), and stops them when the test ends. It returns once every
// node takes clients; JetStream may still be electing its leader.
func StartProcs(t testing.TB, n int) *Procs {
	t.Helper()
	c := &Procs{t: t, bin: NATSServer(t)}
	dir := t.TempDir()
	ports := freePorts(t, 2*n)
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[n+i]))
	}
	for i := range n {
		p := &Proc{Name: fmt.Sprintf("nats-%d", i+1), Port: ports[i], ClusterPort: ports[n+i], index: i,
			conf: filepath.Join(dir, fmt.Sprintf("nats-%d.conf", i+1)), store: filepath.Join(dir, fmt.Sprintf("store-%d", i+1)),
			log: filepath.Join(dir, fmt.Sprintf("nats-%d.log", i+1))}
		conf := fmt.Sprintf("server_name: %s\nlisten: 127.0.0.1:%d\njetstream: enabled\n"+
			"cluster { name: bourse, listen: 127.0.0.1:%d, routes: [%s] }\n",
			p.Name, p.Port, p.ClusterPort, strings.Join(routes, ", "))
		c.add(p, conf)
	}
	c.startAll()
	return c
}

// add adds node p with configuration conf, written to its file.
func (c *Procs) add(p *Proc, conf string) {
	c.t.Helper()
	if err := os.WriteFile(p.conf, []byte(conf), 0o600); err != nil {
		c.t.Fatalf("natstest: %v", err)
	}
	c.Nodes = append(c.Nodes, p)
}

// startAll starts every node, and kills them when the test ends.
func (c *Procs) startAll() {
	c.t.Helper()
	for i := range c.Nodes {
		c.Start(i)
	}
	c.t.Cleanup(func() {
		for i := range c.Nodes {
			c.Kill(i)
		}
	})
}

// StartNode starts one nats-server process of bin (Installed, or
// NATSServer) configured by the text conf gives for its client port, such
// as bourse admin nats-config's output for that port, and stops it when
// the test ends. It returns once the node takes clients.
func StartNode(t testing.TB, bin string, conf func(port int) string) *Procs {
	t.Helper()
	return StartNodeOn(t, bin, filepath.Join(t.TempDir(), "jetstream"), conf)
}

// StartNodeOn is StartNode with the JetStream store in directory store
// (a lazy file system's, for a power loss).
func StartNodeOn(t testing.TB, bin, store string, conf func(port int) string) *Procs {
	t.Helper()
	c := &Procs{t: t, bin: bin, conf: conf}
	dir := t.TempDir()
	p := &Proc{Name: "nats-1", Port: freePorts(t, 1)[0], conf: filepath.Join(dir, "nats-server.conf"),
		store: store, log: filepath.Join(dir, "nats-server.log")}
	if err := os.WriteFile(p.conf, []byte(conf(p.Port)), 0o600); err != nil {
		t.Fatalf("natstest: %v", err)
	}
	c.Nodes = []*Proc{p}
	c.Start(0)
	t.Cleanup(func() { c.Kill(0) })
	return c
}

// Installed is the nats-server the README installs (Debian's package,
// 2.9 where the module builds a current release), found as
// scripts/nats-server.sh finds it: on PATH, else /usr/sbin/nats-server.
// Without it the test skips, except in CI, where it must run (make test
// installs the package).
func Installed(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nats-server"); err == nil {
		return "/usr/sbin/nats-server"
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("natstest: no nats-server installed: in CI it must be (scripts/nats-server.sh installs Debian's)")
	}
	t.Skip("natstest: no nats-server installed (scripts/nats-server.sh installs Debian's)")
	return ""
}

// Start starts node i, again on its ports, configuration and store.
func (c *Procs) Start(i int) {
	c.t.Helper()
	c.run(c.Nodes[i], c.Nodes[i].conf, c.Nodes[i].Port)
}

// Aside starts StartNode's node on its store but on a client port of its
// own, where none of its parties finds it, calls look with its URL, and
// stops it (SIGTERM): what the store holds, as the node recovers it,
// before any party writes to it. The node must be down.
func (c *Procs) Aside(look func(url string)) {
	c.t.Helper()
	p := c.Nodes[0]
	if c.conf == nil || p.Running() {
		c.t.Fatalf("natstest: Aside needs StartNode's node, stopped")
	}
	port := freePorts(c.t, 1)[0]
	conf := p.conf + ".aside"
	if err := os.WriteFile(conf, []byte(c.conf(port)), 0o600); err != nil {
		c.t.Fatalf("natstest: %v", err)
	}
	c.run(p, conf, port)
	look(fmt.Sprintf("nats://127.0.0.1:%d", port))
	c.Stop(0)
}

// run starts p's process with configuration file conf, which names
// client port port, and waits until it takes clients there.
func (c *Procs) run(p *Proc, conf string, port int) {
	c.t.Helper()
	log, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatalf("natstest: %v", err)
	}
	defer log.Close()
	dial := func() (net.Conn, error) {
		return net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	}
	p.cmd = exec.Command(c.bin, "-c", conf, "-sd", p.store)
	if c.net != nil {
		p.cmd = c.net.command(p.index, c.bin, "-c", conf, "-sd", p.store)
		dial = func() (net.Conn, error) { return c.net.dial(p.index, fmt.Sprintf("127.0.0.1:%d", apartClientPort)) }
	}
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		c.t.Fatalf("natstest: start %s: %v", p.Name, err)
	}
	p.exited, p.asked = make(chan struct{}), new(atomic.Bool)
	go func(cmd *exec.Cmd, exited chan struct{}, asked *atomic.Bool) {
		err := cmd.Wait()
		close(exited)
		if !asked.Load() {
			out, _ := os.ReadFile(p.log)
			c.t.Errorf("natstest: %s exited unasked (%v); its log:\n%s", p.Name, err, out)
		}
	}(p.cmd, p.exited, p.asked)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if conn, err := dial(); err == nil {
			conn.Close()
			return
		}
		if !p.Running() {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, _ := os.ReadFile(p.log)
	c.t.Fatalf("natstest: %s does not take clients:\n%s", p.Name, out)
}

// Kill ends node i with SIGKILL, as a machine that dies: no goodbye to
// its peers, no leadership handed over.
func (c *Procs) Kill(i int) { c.signal(i, syscall.SIGKILL) }

// Stop ends node i with SIGTERM, as an operator's restart does.
func (c *Procs) Stop(i int) { c.signal(i, syscall.SIGTERM) }

func (c *Procs) signal(i int, sig syscall.Signal) {
	p := c.Nodes[i]
	if !p.Running() {
		return
	}
	p.asked.Store(true)
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// URLs is every node's client URL, starting with node first's and going
// round: a party given it connects to that node first (with
// nats.DontRandomize), and to the others when that one is down.
func (c *Procs) URLs(first int) string {
	var urls []string
	for k := range c.Nodes {
		urls = append(urls, c.Nodes[(first+k)%len(c.Nodes)].URL())
	}
	return strings.Join(urls, ",")
}

// Index is the index of the node named name, or -1.
func (c *Procs) Index(name string) int {
	for i, p := range c.Nodes {
		if p.Name == name {
			return i
		}
	}
	return -1
}

// Log is node i's log so far, for a failing test to show.
func (c *Procs) Log(i int) string {
	out, _ := os.ReadFile(c.Nodes[i].log)
	return string(out)
}

// NATSServer builds the nats-server command of the module version this
// module requires (go.mod: a current release, where Debian ships 2.9) into
// the test's temporary directory and returns its path. Go's build cache
// makes a build after the first a link only.
func NATSServer(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(t.TempDir(), "nats-server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2")
	cmd.Dir = filepath.Dir(file)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("natstest: go build nats-server: %v: %s", err, out)
	}
	return bin
}
