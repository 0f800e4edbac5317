package natstest

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is n NATS servers in one cluster with JetStream, in the test's
// process, on loopback: routes between every pair, each node's store in
// a directory of its own. A node can be stopped and started again on its
// port and store, as an operator restarts one.
type Cluster struct {
	t     testing.TB
	opts  []*server.Options
	Nodes []*server.Server
}

// StartCluster starts n nodes and waits until JetStream has a meta leader.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	clusterPorts := freePorts(t, n)
	var routes []*url.URL
	for _, p := range clusterPorts {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	for i := range n {
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "bourse-test", Host: "127.0.0.1", Port: clusterPorts[i]},
			Routes:  routes,
		})
		c.Nodes = append(c.Nodes, nil)
	}
	for i := range n {
		c.Start(i)
	}
	t.Cleanup(func() {
		for i := range c.Nodes {
			c.Stop(i)
		}
	})
	c.WaitReady(30 * time.Second)
	return c
}

// Start starts node i (again, on the port it had).
func (c *Cluster) Start(i int) {
	c.t.Helper()
	s, err := server.NewServer(c.opts[i])
	if err != nil {
		c.t.Fatalf("natstest: node %d: %v", i, err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		c.t.Fatalf("natstest: node %d not ready", i)
	}
	c.opts[i].Port = s.Addr().(*net.TCPAddr).Port // a restart keeps the client port
	c.Nodes[i] = s
}

// Stop shuts node i down; its store stays for a Start.
func (c *Cluster) Stop(i int) {
	if s := c.Nodes[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.Nodes[i] = nil
	}
}

// URLs is every running node's client URL, comma-separated, as a party
// that lists every node connects.
func (c *Cluster) URLs() string {
	var urls []string
	for _, s := range c.Nodes {
		if s != nil {
			urls = append(urls, s.ClientURL())
		}
	}
	return strings.Join(urls, ",")
}

// WaitReady waits until the running nodes have a JetStream meta leader
// and every one of them is current with it.
func (c *Cluster) WaitReady(within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		leader, current := false, true
		for _, s := range c.Nodes {
			if s == nil {
				continue
			}
			leader = leader || s.JetStreamIsLeader()
			current = current && s.JetStreamIsClustered() && s.JetStreamIsCurrent()
		}
		if leader && current {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("natstest: no JetStream meta leader within %v", within)
}

// freePorts finds n free loopback ports for the cluster's routes.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("natstest: free port: %v", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}
