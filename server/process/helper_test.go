package process_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/process"
)

// helperEnv makes the test binary act as a job: its value names the act.
const helperEnv = "BOURSE_TEST_HELPER"

func TestMain(m *testing.M) {
	if act := os.Getenv(helperEnv); act != "" {
		os.Exit(helper(act, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helper is a job of the tests:
//
//	env          print the GPU variables, the contract and SECRET
//	exit N       exit with status N
//	spew N       write N bytes to stdout
//	stubborn     ignore SIGTERM, start a child that ignores it too, print its pid, wait
//	checkpoint   on SIGTERM print "checkpointed" and exit 0
//	count        print a number every 10ms until killed
//	sleep        sleep until killed
//	runner DIR   start /bin/sleep as a job of a Runner with output in DIR, print its pid, wait
//	results      write "done" to $BOURSE_RESULTS/out.txt, say so on stderr, exit 4
//	spin         keep a CPU busy until killed
//	detach M E   start a spinner that leaves the job's process group (M:
//	             setsid, or doublefork: a child in a new session whose
//	             parent exits), print its pid, then exit (E = exit) or wait
//	fork-spin    start a spinner in a new session, print its pid, exit
//	victim       write $BOURSE_RESULTS/secret.txt, print "ready", wait
//	pry WHAT…    try each WHAT (pry's doc), print what it could and could not
//	whoami       print the uid it runs as
//	new-users U D  make a Runner with job user U and output in D; print its error
//	cat PATH…    print each file's owner, mode and content
func helper(act string, args []string) int {
	switch act {
	case "cat":
		for _, p := range args {
			fi, err := os.Lstat(p)
			if err != nil {
				fmt.Println("error", err)
				return 1
			}
			b, _ := os.ReadFile(p)
			fmt.Printf("%s uid=%d mode=%v %q\n", p, fi.Sys().(*syscall.Stat_t).Uid, fi.Mode(), b)
		}
		return 0
	case "victim":
		if err := os.WriteFile(filepath.Join(os.Getenv(process.ResultsEnv), "secret.txt"), []byte("bob's results"), 0o644); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	case "pry":
		fmt.Printf("uid %d\n", os.Getuid())
		for _, what := range args {
			if err := pry(what); err != nil {
				fmt.Printf("denied %s: %v\n", what, err)
			} else {
				fmt.Printf("LEAK %s\n", what)
			}
		}
		return 0
	case "whoami":
		fmt.Println(os.Getuid())
		return 0
	case "new-users":
		_, err := process.New(process.Config{Allowed: []string{"/bin/sleep"}, Users: []string{args[0]}, OutputDir: args[1], Logger: quiet()})
		fmt.Println(err)
		return 0
	case "spin":
		for i := 0; ; i++ {
			_ = i * i
		}
	case "detach":
		pid, err := detach(args[0])
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println(pid)
		if args[1] == "exit" {
			return 0
		}
		time.Sleep(time.Hour)
		return 0
	case "fork-spin":
		pid, err := detach("setsid")
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println(pid)
		return 0
	case "env":
		for _, k := range []string{"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "BOURSE_CONTRACT", "SEED", "SECRET", "PATH"} {
			v, ok := os.LookupEnv(k)
			fmt.Printf("%s=%s %v\n", k, v, ok)
		}
		return 0
	case "exit":
		n, _ := strconv.Atoi(args[0])
		return n
	case "spew":
		n, _ := strconv.Atoi(args[0])
		_, _ = os.Stdout.Write([]byte(strings.Repeat("x", n)))
		return 0
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		child := exec.Command(os.Args[0])
		child.Env = []string{helperEnv + "=stubborn-child"}
		if err := child.Start(); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println(child.Process.Pid)
		time.Sleep(time.Hour)
		return 0
	case "stubborn-child":
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
		return 0
	case "checkpoint":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Println("ready")
		<-c
		fmt.Println("checkpointed")
		return 0
	case "count":
		for i := 0; ; i++ {
			fmt.Println(i)
			time.Sleep(10 * time.Millisecond)
		}
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	case "results":
		if err := os.WriteFile(filepath.Join(os.Getenv(process.ResultsEnv), "out.txt"), []byte("done"), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "wrote out.txt")
		return 4
	case "runner":
		r, err := process.New(process.Config{Allowed: []string{"/bin/sleep"}, OutputDir: args[0], Meter: server.FullUse{}, Logger: quiet()})
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		j, err := r.Start(context.Background(), server.Assignment{Contract: "orphan", GPUs: gpus(0),
			Job: &contract.JobSpec{Command: "/bin/sleep", Args: []string{"3600"}}})
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println(j.(interface{ PID() int }).PID())
		time.Sleep(time.Hour)
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown act", act)
	return 2
}

// pry tries one thing a job must not do:
//
//	read:PATH    read a file (or list a folder)
//	write:PATH   create a file
//	signal:PID   send a process signal 0 (the permission check of every signal)
//	cont:PID     send a process SIGCONT (allowed within a session)
func pry(what string) error {
	kind, arg, _ := strings.Cut(what, ":")
	switch kind {
	case "read":
		fi, err := os.Stat(arg)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			_, err = os.ReadDir(arg)
		} else {
			_, err = os.ReadFile(arg)
		}
		return err
	case "write":
		return os.WriteFile(arg, []byte("planted"), 0o644)
	case "signal", "cont":
		pid, err := strconv.Atoi(arg)
		if err != nil {
			return err
		}
		sig := syscall.Signal(0)
		if kind == "cont" {
			sig = syscall.SIGCONT
		}
		return syscall.Kill(pid, sig)
	}
	return fmt.Errorf("unknown %q", kind)
}

// detach starts a spinner outside the caller's process group and returns
// its pid: in a session of its own (setsid), or through a child that
// starts it so and exits (doublefork), leaving it an orphan.
func detach(mode string) (int, error) {
	switch mode {
	case "setsid":
		c := exec.Command(os.Args[0])
		c.Env = []string{helperEnv + "=spin"}
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			return 0, err
		}
		return c.Process.Pid, nil
	case "doublefork":
		c := exec.Command(os.Args[0])
		c.Env = []string{helperEnv + "=fork-spin"}
		out, err := c.Output() // the middle process has exited: its child is an orphan
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(strings.TrimSpace(string(out)))
	}
	return 0, fmt.Errorf("unknown mode %q", mode)
}
