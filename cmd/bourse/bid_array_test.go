package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
)

// TestParseArraySpec: N alone is 0..N-1; a list is its indexes, ranges
// and stepped ranges, sorted, each once, within the bounds; %N after
// either is the throttle.
func TestParseArraySpec(t *testing.T) {
	for _, tc := range []struct {
		spec     string
		want     []int  // nil: refused
		why      string // what the refusal says
		throttle int
	}{
		{"1", []int{0}, "", 0},
		{"3", []int{0, 1, 2}, "", 0},
		{"0-2,7", []int{0, 1, 2, 7}, "", 0},
		{"7-7", []int{7}, "", 0},
		{"20,0-1", []int{0, 1, 20}, "", 0},
		{"99999", nil, "want 1 to 1000 tasks", 0},
		{"0", nil, "want 1 to 1000 tasks", 0},
		{"0-99999", nil, "more than 1000 tasks", 0},
		{"0-999", slices.Collect(func(yield func(int) bool) {
			for i := 0; i < 1000 && yield(i); i++ {
			}
		}), "", 0},
		{"0-1000", nil, "more than 1000 tasks", 0},
		{"5,100000", nil, "index 100000: want 0 to 99999", 0},
		{"3-1", nil, "ends before it starts", 0},
		{"0-3,2", nil, "index 2 given twice", 0},
		{"", nil, "is not an index I or a range A-B", 0},
		{"1,", nil, `"" is not an index`, 0},
		{"-1", nil, `"-1" is not an index`, 0},
		{"+3", nil, "is not an index", 0},
		{" 3", nil, "is not an index", 0},
		{"1-2-3", nil, `"1-2-3" is not an index`, 0},
		{"0-9:2", []int{0, 2, 4, 6, 8}, "", 0},
		{"0-99:5", []int{0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95}, "", 0},
		{"1-10:4,2", []int{1, 2, 5, 9}, "", 0},
		{"3-3:7", []int{3}, "", 0},
		{"0-99999:100", slices.Collect(func(yield func(int) bool) {
			for i := 0; i < 100000 && yield(i); i += 100 {
			}
		}), "", 0},
		{"0-9%4", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "", 4},
		{"3%1", []int{0, 1, 2}, "", 1},
		{"0-99:50,7%1000", []int{0, 7, 50}, "", 1000},
		{"0-99999:99", nil, "more than 1000 tasks", 0},
		{"0-9:0", nil, `"0-9:0": a step goes after a range`, 0},
		{"5:2", nil, `"5:2": a step goes after a range`, 0},
		{"0-9:", nil, "a step goes after a range", 0},
		{"0-9:x", nil, "a step goes after a range", 0},
		{"0-4:2,2", nil, "index 2 given twice", 0},
		{"0-9%0", nil, "%0 is not a throttle", 0},
		{"0-9%", nil, "% is not a throttle", 0},
		{"0-9%1001", nil, "%1001 is not a throttle", 0},
		{"0-9%2%3", nil, "%2%3 is not a throttle", 0},
		{"%3", nil, `"" is not an index`, 3},
		{"99999999999999999999", nil, "is not an index", 0},
	} {
		got, throttle, err := parseArraySpec(tc.spec)
		if tc.want == nil {
			if !errors.As(err, new(*usageError)) || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "--array") {
				t.Errorf("--array %q: %v, %v; want a usage error naming --array that says %q", tc.spec, got, err, tc.why)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) || throttle != tc.throttle {
			t.Errorf("--array %q: %v %%%d, %v; want %v %%%d", tc.spec, got, throttle, err, tc.want, tc.throttle)
		}
	}
}

// FuzzArraySpec: a SPEC that parses gives 1 to maxArrayTasks indexes,
// strictly rising, each within the bounds, and the same indexes written
// back as a list of ranges parse to themselves; one that does not is a
// usage error naming --array.
func FuzzArraySpec(f *testing.F) {
	for _, s := range []string{"10", "0-9,20", "7-7", "3-1", "0-3,2", "1,", "-1", "0-1000", "99999", "0,99999", "1-2-3", "0-99:5", "0-9%2", "1-9:3,4%1000", "5:2", "0-9:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		got, throttle, err := parseArraySpec(spec)
		if err != nil {
			if !errors.As(err, new(*usageError)) || !strings.HasPrefix(err.Error(), "--array ") {
				t.Fatalf("parseArraySpec(%q): %v, want a usage error naming --array", spec, err)
			}
			return
		}
		if len(got) < 1 || len(got) > maxArrayTasks {
			t.Fatalf("parseArraySpec(%q): %d tasks", spec, len(got))
		}
		parts := make([]string, len(got))
		for i, n := range got {
			if n < 0 || n > maxArrayIndex || (i > 0 && n <= got[i-1]) {
				t.Fatalf("parseArraySpec(%q) = %v: not rising within 0..%d", spec, got, maxArrayIndex)
			}
			parts[i] = strconv.Itoa(n) + "-" + strconv.Itoa(n)
		}
		if throttle < 0 || throttle > maxArrayTasks {
			t.Fatalf("parseArraySpec(%q): throttle %d", spec, throttle)
		}
		list := strings.Join(parts, ",")
		if throttle > 0 {
			list += "%" + strconv.Itoa(throttle)
		}
		again, throttleAgain, err := parseArraySpec(list)
		if err != nil || !slices.Equal(again, got) || throttleAgain != throttle {
			t.Fatalf("parseArraySpec(%q) = %v %%%d, but its list parses to %v %%%d, %v", spec, got, throttle, again, throttleAgain, err)
		}
	})
}

// TestArrayFlagsBeforeConnecting: --array's mistakes exit 2 and name the
// flag, with NATS unreachable.
func TestArrayFlagsBeforeConnecting(t *testing.T) {
	url := deadNATS(t)
	job := []string{"--price", "0.3", "--command", "/bin/true"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"BadSpec", append([]string{"--array", "0-x"}, job...), `--array "0-x": "0-x" is not an index`},
		{"TooMany", append([]string{"--array", "1001"}, job...), "want 1 to 1000 tasks"},
		{"Take", append([]string{"--array", "3", "--take", "1"}, job...), "--array makes an offer per index and takes no counter-offer"},
		{"TakeServer", append([]string{"--array", "3", "--take", "gpu1", "--gpus", "1"}, job...), "drop --take"},
		{"Auto", []string{"--array", "3", "--auto", "fixed", "--value", "1", "--command", "/bin/true"}, "--auto negotiates one offer"},
		{"Synthetic", []string{"--array", "3", "--price", "0.3"}, "--array needs --command or --image"},
		{"ExportIndex", append([]string{"--array", "3", "--export", "BOURSE_ARRAY_INDEX=1"}, job...), "--export BOURSE_ARRAY_INDEX: --array sets it"},
		{"InFlightZero", append([]string{"--array", "3", "--in-flight", "0"}, job...), "--in-flight 0: want 1 to 64"},
		{"InFlightMany", append([]string{"--array", "3", "--in-flight", "65"}, job...), "--in-flight 65: want 1 to 64"},
		{"InFlightAlone", append([]string{"--in-flight", "4"}, job...), "--in-flight bounds an array's offers"},
		{"Step", append([]string{"--array", "0-9:0"}, job...), "a step goes after a range"},
		{"Throttle", append([]string{"--array", "0-9%0"}, job...), "%0 is not a throttle"},
		{"LongRequestID", append([]string{"--array", "0-10", "--request-id", strings.Repeat("r", 126)}, job...), "--request-id: at most 125 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append([]string{"bid", "--nats", url, "--id", "you", "offer"}, tc.args...), &out, &errOut)
			assert.Equal(t, exitUsage, code, "%s", errOut.String())
			assert.Contains(t, errOut.String(), tc.want)
			assert.NotContains(t, errOut.String(), "NATS", "it connected first")
		})
	}
}

// TestArrayError: the array's status is the worst of its offers': a
// failure over no answer over the market's no; none if all made one.
func TestArrayError(t *testing.T) {
	refused := &bourse.Error{Code: bourse.ERejected, Message: "no"}
	away := &bourse.Error{Code: bourse.EUnavailable, Message: "no answer"}
	broken := &bourse.Error{Code: bourse.EInvalidOffer, Message: "bad"}
	o := &offerFlags{array: "4", requestID: "r1"}
	task := func(i int, err error) arrayTask { return arrayTask{Index: i, err: err} }
	ctx := context.Background()
	ok := arrayTask{Index: 0}
	ok.Queued = &contract.Waiting{ID: "w"}
	assert.NoError(t, arrayError(ctx, o, []arrayTask{ok}), "a waiting offer is an offer made")
	for _, tc := range []struct {
		tasks []arrayTask
		want  int
		says  string
	}{
		{[]arrayTask{ok, task(1, refused)}, exitRefused, "1 of 2 offers made no contract; index 1: rejected: no"},
		{[]arrayTask{task(0, refused), task(1, away), task(2, refused)}, exitUnavailable, "--request-id r1 cannot escrow twice"},
		{[]arrayTask{task(0, away), task(1, broken), task(2, refused)}, exitFailure, "3 of 3 offers made no contract; index 1: invalid_offer: bad"},
	} {
		err := arrayError(ctx, o, tc.tasks)
		assert.Equal(t, tc.want, exitStatus(err), "%v", err)
		assert.ErrorContains(t, err, tc.says)
	}
}

// TestOfferArray: --array makes an offer per index, each a contract whose
// job sees its own index and the array's size, though the server's
// allow_env names neither; the same command again makes nothing twice;
// an array the server refuses says so per index and exits 3.
func TestOfferArray(t *testing.T) {
	b := startBidMarket(t, []scenario.ServerSpec{}...)
	job := os.Args[0]
	arrayServer(t, b, job, "GREETING")
	args := []string{"offer", "--gpus", "1", "--model", "A100", "--price", "0.50", "--time-limit", "2m", "--array", "0-1,5", "--request-id", "arr",
		"--command", job, "--arg=" + jobFlag, "--arg=env", "--arg=BOURSE_ARRAY_INDEX", "--arg=BOURSE_ARRAY_SIZE", "--arg=GREETING", "--export", "GREETING=hi"}

	out := b.ok("ada", append([]string{"--json"}, args...)...)
	var tasks []arrayTask
	require.NoError(t, json.Unmarshal([]byte(out), &tasks), out)
	require.Len(t, tasks, 3, out)
	ids := map[int]string{}
	for n, want := range []int{0, 1, 5} {
		k := tasks[n]
		require.Equal(t, want, k.Index)
		assert.Equal(t, "arr/"+strconv.Itoa(want), k.RequestID)
		require.NotNil(t, k.Contract, "index %d: %s", want, out)
		assert.Nil(t, k.Error)
		ids[want] = k.Contract.ID
	}
	for i, id := range ids {
		b.waitState("ada", id, contract.StateSettled)
		assert.Equal(t, "BOURSE_ARRAY_INDEX="+strconv.Itoa(i)+"\nBOURSE_ARRAY_SIZE=3\nGREETING=hi\n", b.ok("ada", "logs", "--follow", id), "index %d's job", i)
	}

	// The same command again (its --request-id too) returns the same
	// contracts, and holds no more money.
	before := len(b.contractsOf("ada"))
	balance := b.balance("ada")
	out = b.ok("ada", args...)
	assert.Equal(t, "0 contract "+ids[0]+" with gpu1\n1 contract "+ids[1]+" with gpu1\n5 contract "+ids[5]+" with gpu1\n"+
		"watch one: bourse bid --nats "+b.m.URL()+" --id ada watch "+ids[0]+"; list them: bourse bid --nats "+b.m.URL()+" --id ada contracts\n", out)
	assert.Len(t, b.contractsOf("ada"), before, "no contract twice")
	assert.True(t, balance.Available.Equal(b.balance("ada").Available), "no escrow twice")

	// A variable allow_env does not allow: every index refused, each
	// said, and the market's no is the status.
	out, errOut, code := b.bid("ada", "offer", "--gpus", "1", "--model", "A100", "--price", "0.50", "--time-limit", "2m", "--array", "2",
		"--command", job, "--arg="+jobFlag, "--arg=env", "--arg=TOKEN", "--export", "TOKEN=x")
	assert.Equal(t, exitRefused, code, errOut)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 2, out)
	for i, l := range lines {
		assert.True(t, strings.HasPrefix(l, strconv.Itoa(i)+" no contract: "), l)
		assert.Contains(t, l, "may not set TOKEN")
	}
	assert.Contains(t, errOut, "--array 2: 2 of 2 offers made no contract; index 0: ")
	assert.Len(t, b.contractsOf("ada"), before)
}

// TestOfferArrayThrottle: --array A-B:S%N offers every S-th index and
// keeps at most N of the array's contracts live at once, sending the
// next offer as one settles; the command returns once the last index is
// offered, its lines in the indexes' order.
func TestOfferArrayThrottle(t *testing.T) {
	b := startBidMarket(t, []scenario.ServerSpec{}...)
	job := os.Args[0]
	arrayServer(t, b, job)
	out := b.ok("ada", "--json", "offer", "--gpus", "1", "--model", "A100", "--price", "0.50", "--time-limit", "2m", "--array", "0-8:2%2",
		"--request-id", "thr", "--command", job, "--arg="+jobFlag, "--arg=env", "--arg=BOURSE_ARRAY_INDEX")
	var tasks []arrayTask
	require.NoError(t, json.Unmarshal([]byte(out), &tasks), out)
	require.Len(t, tasks, 5, out)
	var ks []protocol.ContractView
	for n, want := range []int{0, 2, 4, 6, 8} {
		require.Equal(t, want, tasks[n].Index)
		require.NotNil(t, tasks[n].Contract, "index %d: %s", want, out)
		id := tasks[n].Contract.ID
		ks = append(ks, b.waitState("ada", id, contract.StateSettled))
		assert.Equal(t, "BOURSE_ARRAY_INDEX="+strconv.Itoa(want)+"\n", b.ok("ada", "logs", "--follow", id), "index %d's job", want)
	}
	// Live from its acceptance to its settlement: never more than two
	// at once, and two at once at the start (both first offers go out
	// together, and each job runs a second).
	most := 0
	for _, k := range ks {
		live := 0
		for _, o := range ks {
			if !o.AcceptedAt.After(k.AcceptedAt) && o.SettledAt.After(k.AcceptedAt) {
				live++
			}
		}
		most = max(most, live)
	}
	assert.Equal(t, 2, most, "contracts live at once")
}

// arrayServer starts gpu1, running only job (with allowEnv past its own
// variables), on b's market, and waits for it to register.
func arrayServer(t *testing.T, b *bidMarket, job string, allowEnv ...string) {
	t.Helper()
	gpu1 := startServer(t, busyNVML, `
id: gpu1
nvml: required
outbox_dir: `+t.TempDir()+`
nats: {url: `+b.m.URL()+`}
currency: {code: CRED, scale: 2}
policy: {kind: reserve}
heartbeat: 100ms
sample_every: 50ms
runner: {kind: process, allowed: [`+job+`], output_dir: `+t.TempDir()+`, grace: 2s, allow_env: [`+strings.Join(allowEnv, ", ")+`]}
`)
	require.Eventually(t, func() bool { return strings.Contains(gpu1.String(), "msg=registered") }, 10*time.Second, 50*time.Millisecond,
		"the server did not register:\n%s", gpu1)
}
