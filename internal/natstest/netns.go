package natstest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A cut between NATS nodes is made for real, below NATS: each node runs
// in a network namespace of its own (ip netns), with an address on a
// bridge in another namespace (the hub) that joins them, and a cut
// drops every packet between the cut node's address and the others'
// (blackhole routes on both sides: nothing answers, nothing is refused;
// a new connection fails at once). NATS notices the cut as it notices a
// real one, by the pings its routes miss (every two minutes, by
// nats-server's default: a shorter cut goes unnoticed, and what is sent
// over a route waits for the heal). Only the routes go through the
// bridge: the parties of a node (its exchange, its servers and clients)
// reach it through a relay of the test's own, a loopback port in the
// test's namespace that the test connects into the node's namespace, so
// that a node's parties stay with it through a cut, as the machines of
// one rack do. Every address is inside the test's namespaces; nothing of
// the machine's own network changes, and the namespaces (and the veths
// and bridge in them) go when the test ends.

// nsPrefix begins the names of the test's namespaces, followed by the
// test process's pid: namespaces left by a test that died (a timeout's
// panic runs no cleanup) are found by it and removed.
const nsPrefix = "bourse-nt"

// netns is the namespaces of a cluster of n nodes.
type netns struct {
	t      testing.TB
	ip     string // the ip command
	hub    string
	nodes  []string // the nodes' namespaces, by index
	made   []string // the namespaces made so far, to remove
	relays []net.Listener

	mu    sync.Mutex
	conns map[net.Conn]bool // the relays' connections, closed at the end
}

// nodeAddr is node i's address on the bridge.
func nodeAddr(i int) string { return fmt.Sprintf("10.45.0.%d", i+1) }

// requireNetns skips the test where it cannot make network namespaces
// (not root, no ip command and none to install), saying why, except in
// CI (CI=true), where it must and the test fails instead. As root on
// Debian it installs iproute2 if ip is missing, as scripts/pg.sh
// installs PostgreSQL.
func requireNetns(t testing.TB) string {
	t.Helper()
	ip, err := ipCommand()
	if err == nil {
		return ip
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("natstest: %v: in CI the partition must run (as root, with iproute2)", err)
	}
	t.Skipf("natstest: %v: the partition needs root and the ip command (iproute2)", err)
	return ""
}

// ipCommand finds the ip command, installing iproute2 as root where it
// is missing, and checks that it can make a namespace.
func ipCommand() (string, error) {
	if os.Geteuid() != 0 {
		return "", errors.New("not root (network namespaces need it)")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		if _, aerr := exec.LookPath("apt-get"); aerr != nil {
			return "", fmt.Errorf("no ip command: %w", err)
		}
		_, file, _, _ := runtime.Caller(0)
		script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "apt-install.sh")
		if out, err := exec.Command("bash", script, "iproute2").CombinedOutput(); err != nil {
			return "", fmt.Errorf("install iproute2: %v: %s", err, out)
		}
		if ip, err = exec.LookPath("ip"); err != nil {
			return "", err
		}
	}
	probe := fmt.Sprintf("%s%d-probe", nsPrefix, os.Getpid())
	if out, err := exec.Command(ip, "netns", "add", probe).CombinedOutput(); err != nil {
		return "", fmt.Errorf("ip netns add: %v: %s", err, out)
	}
	_ = exec.Command(ip, "netns", "del", probe).Run()
	return ip, nil
}

// newNetns makes the hub and n nodes' namespaces, joined by a bridge,
// and a relay for each node's client port (clientPort, inside its
// namespace), and removes them when the test ends.
func newNetns(t testing.TB, ip string, n, clientPort int) *netns {
	t.Helper()
	removeStale(ip)
	base := fmt.Sprintf("%s%d-%d", nsPrefix, os.Getpid(), time.Now().UnixNano()%1e6)
	ns := &netns{t: t, ip: ip, hub: base + "-hub", conns: map[net.Conn]bool{}}
	t.Cleanup(ns.remove)
	ns.add(ns.hub)
	ns.run("-n", ns.hub, "link", "add", "br0", "type", "bridge")
	ns.run("-n", ns.hub, "link", "set", "br0", "up")
	for i := range n {
		name := fmt.Sprintf("%s-%d", base, i+1)
		ns.nodes = append(ns.nodes, name)
		ns.add(name)
		ns.run("-n", name, "link", "set", "lo", "up")
		port := fmt.Sprintf("p%d", i+1)
		ns.run("-n", ns.hub, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", name)
		ns.run("-n", ns.hub, "link", "set", port, "master", "br0", "up")
		ns.run("-n", name, "addr", "add", nodeAddr(i)+"/24", "dev", "eth0")
		ns.run("-n", name, "link", "set", "eth0", "up")
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("natstest: relay: %v", err)
		}
		ns.relays = append(ns.relays, l)
	}
	// The relays read the nodes' names: they start once all are made.
	for i, l := range ns.relays {
		go ns.relay(l, i, clientPort)
	}
	return ns
}

// removeStale removes namespaces a test that died left: named for a
// process that no longer runs.
func removeStale(ip string) {
	out, _ := exec.Command(ip, "netns", "list").Output()
	re := regexp.MustCompile(`^` + nsPrefix + `(\d+)-\S+`)
	for _, line := range strings.Split(string(out), "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if pid, _ := strconv.Atoi(m[1]); pid > 0 && unix.Kill(pid, 0) == unix.ESRCH {
			_ = exec.Command(ip, "netns", "del", m[0]).Run()
		}
	}
}

// add makes namespace name.
func (ns *netns) add(name string) {
	ns.t.Helper()
	ns.run("netns", "add", name)
	ns.made = append(ns.made, name)
}

// run runs ip with args, failing the test if it fails.
func (ns *netns) run(args ...string) {
	ns.t.Helper()
	if out, err := exec.Command(ns.ip, args...).CombinedOutput(); err != nil {
		ns.t.Fatalf("natstest: ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// command is name with args run in node i's namespace.
func (ns *netns) command(i int, name string, args ...string) *exec.Cmd {
	return exec.Command(ns.ip, append([]string{"netns", "exec", ns.nodes[i], name}, args...)...)
}

// dial connects to addr inside node i's namespace: the socket is made
// on a thread moved into it, and stays there.
func (ns *netns) dial(i int, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The thread is locked and never unlocked: if it cannot come
		// back to the test's namespace, it ends with the goroutine.
		runtime.LockOSThread()
		c, err := ns.dialOnThread(i, addr)
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}

func (ns *netns) dialOnThread(i int, addr string) (net.Conn, error) {
	own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return nil, err
	}
	defer own.Close()
	target, err := os.Open(filepath.Join("/run/netns", ns.nodes[i]))
	if err != nil {
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("setns %s: %w", ns.nodes[i], err)
	}
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if serr := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); serr != nil {
		if c != nil {
			c.Close()
		}
		return nil, fmt.Errorf("setns back: %w", serr)
	}
	runtime.UnlockOSThread()
	return c, err
}

// relay takes connections on l and joins each to node i's client port.
func (ns *netns) relay(l net.Listener, i, port int) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			n, err := ns.dial(i, fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				c.Close()
				return
			}
			if !ns.track(c, n) {
				return
			}
			go func() { _, _ = io.Copy(n, c); n.Close(); c.Close() }()
			_, _ = io.Copy(c, n)
			c.Close()
			n.Close()
		}()
	}
}

// track keeps a relayed pair for the end, or closes it if the end came.
func (ns *netns) track(cs ...net.Conn) bool {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.conns == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		ns.conns[c] = true
	}
	return true
}

// cut drops every packet between node i and the others, both ways.
func (ns *netns) cut(i int) { ns.routes("add", i) }

// heal undoes cut.
func (ns *netns) heal(i int) { ns.routes("del", i) }

func (ns *netns) routes(verb string, i int) {
	ns.t.Helper()
	for j := range ns.nodes {
		if j == i {
			continue
		}
		ns.run("-n", ns.nodes[i], "route", verb, "blackhole", nodeAddr(j)+"/32")
		ns.run("-n", ns.nodes[j], "route", verb, "blackhole", nodeAddr(i)+"/32")
	}
}

// remove closes the relays and removes the namespaces, with the veths
// and the bridge in them. The nodes' processes must have ended.
func (ns *netns) remove() {
	for _, l := range ns.relays {
		l.Close()
	}
	ns.mu.Lock()
	for c := range ns.conns {
		c.Close()
	}
	ns.conns = nil
	ns.mu.Unlock()
	for _, name := range ns.made {
		if out, err := exec.Command(ns.ip, "netns", "del", name).CombinedOutput(); err != nil {
			ns.t.Errorf("natstest: ip netns del %s: %v: %s", name, err, out)
		}
	}
}

// apartClientPort and apartClusterPort are StartProcsApart's nodes'
// ports inside their namespaces, each its own.
const (
	apartClientPort  = 4222
	apartClusterPort = 6222
)

// StartProcsApart starts n nats-server processes in one cluster, as
// StartProcs does, each in a network namespace of its own so that one can
// be cut off from the others (Cut) and joined again (Heal). A node's
// Port is its relay's, on loopback. Its routes ping as nats-server's
// default has them, as docs/operations.md's cluster recipe deploys them:
// with pings every second (ping_interval: 1s, ping_max: 3) a cut is
// noticed within 4 s, and the parties' questions no longer wait on dead
// routes, so TestPartition passed with the exchanges' sharing of what
// they hear turned off; with the default it does not. It needs root and
// the ip command: requireNetns.
func StartProcsApart(t testing.TB, n int) *Procs {
	t.Helper()
	ip := requireNetns(t)
	ns := newNetns(t, ip, n, apartClientPort)
	c := &Procs{t: t, bin: NATSServer(t), net: ns}
	dir := t.TempDir()
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://%s:%d", nodeAddr(i), apartClusterPort))
	}
	for i := range n {
		p := &Proc{Name: fmt.Sprintf("nats-%d", i+1), Port: ns.relays[i].Addr().(*net.TCPAddr).Port, ClusterPort: apartClusterPort, index: i,
			conf: filepath.Join(dir, fmt.Sprintf("nats-%d.conf", i+1)), store: filepath.Join(dir, fmt.Sprintf("store-%d", i+1)),
			log: filepath.Join(dir, fmt.Sprintf("nats-%d.log", i+1))}
		// no_advertise: the nodes' client addresses are inside their
		// namespaces, where no party could follow them.
		conf := fmt.Sprintf("server_name: %s\nlisten: 127.0.0.1:%d\njetstream: enabled\n"+
			"cluster { name: bourse, listen: \"%s:%d\", routes: [%s], no_advertise: true }\n",
			p.Name, apartClientPort, nodeAddr(i), apartClusterPort, strings.Join(routes, ", "))
		c.add(p, conf)
	}
	c.startAll()
	return c
}

// Cut drops every packet between node i and the others, both ways, until
// Heal: a partition. Its parties keep reaching it.
func (c *Procs) Cut(i int) {
	c.t.Helper()
	if c.net == nil {
		c.t.Fatalf("natstest: Cut needs StartProcsApart's nodes")
	}
	c.net.cut(i)
}

// Heal ends Cut(i).
func (c *Procs) Heal(i int) {
	c.t.Helper()
	if c.net == nil {
		c.t.Fatalf("natstest: Heal needs StartProcsApart's nodes")
	}
	c.net.heal(i)
}
