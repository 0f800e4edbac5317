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

	"github.com/bourse/bourse/pricing"
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
func helper(act string, args []string) int {
	switch act {
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
			Job: &pricing.JobSpec{Command: "/bin/sleep", Args: []string{"3600"}}})
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
