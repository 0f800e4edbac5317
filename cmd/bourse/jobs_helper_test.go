package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// jobFlag makes the test binary act as a real job: bourse.test -bourse-job
// ACT ARGS…, which bourse server's process runner starts as a program
// it allows.
const jobFlag = "-bourse-job"

// runTestJob runs a test job where the test binary was started as one
// (TestMain calls it first).
func runTestJob() {
	if len(os.Args) > 2 && os.Args[1] == jobFlag {
		os.Exit(testJob(os.Args[2], os.Args[3:]))
	}
}

// testJob is a job of the tests:
//
//	train N   leave notes.txt in $BOURSE_RESULTS, print "step i" every 100 ms
//	          for N steps and "loss" on stderr, then leave model.txt and exit 0
//	exit N    print "exiting N", and exit N after 200 ms
//	read PATH print the file PATH (of its working folder, where its files
//	          are), leave it in $BOURSE_RESULTS as seen.txt, and run on for
//	          a second (long enough to be metered, however fast the read)
func testJob(act string, args []string) int {
	switch act {
	case "read":
		data, err := os.ReadFile(args[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Print(string(data))
		if err := os.WriteFile(filepath.Join(os.Getenv("BOURSE_RESULTS"), "seen.txt"), data, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		time.Sleep(time.Second)
		return 0
	case "exit":
		n, _ := strconv.Atoi(args[0])
		fmt.Printf("exiting %d\n", n)
		time.Sleep(200 * time.Millisecond)
		return n
	case "train":
		n, _ := strconv.Atoi(args[0])
		results := os.Getenv("BOURSE_RESULTS")
		if err := os.WriteFile(filepath.Join(results, "notes.txt"), []byte("started\n"), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "loss 0.5")
		for i := 1; i <= n; i++ {
			fmt.Printf("step %d\n", i)
			time.Sleep(100 * time.Millisecond)
		}
		if err := os.MkdirAll(filepath.Join(results, "ckpt"), 0o700); err != nil {
			return 1
		}
		if err := os.WriteFile(filepath.Join(results, "ckpt", "model.txt"), []byte("weights\n"), 0o600); err != nil {
			return 1
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown act", act)
	return 2
}
