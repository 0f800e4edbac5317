package protocol

import (
	"fmt"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
)

// Limits of a hello or heartbeat: more than any one server has.
// MaxServerModels bounds the GPU models one server may say it has: each
// is a line of market data every reader receives, and a server that made
// up 64 of them added 64 lines to every market-data message (the probe of
// 2026-12-01), where clients' models are held to 16 lines a currency.
const (
	MaxServerGPUs   = 4096
	MaxServerModels = 8
	maxModel        = 64
	maxPolicy       = 256
)

// Check checks what a hello or heartbeat says of the server itself: a
// currency code, 1..MaxServerGPUs GPUs with distinct indexes, free GPUs
// between none and all, running contracts that are ids. Whether the
// currency exists, and whether the server registered in it, are the
// exchange's to check.
func (h Hello) Check() error {
	const op = "protocol.Hello"
	bad := func(field, format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if err := CheckID(h.Currency); err != nil {
		return bad("currency", "%v", err)
	}
	if h.Scale != nil && (*h.Scale < 0 || *h.Scale > currency.MaxScale) {
		return bad("scale", "%d: want 0..%d", *h.Scale, currency.MaxScale)
	}
	if len(h.GPUs) == 0 || len(h.GPUs) > MaxServerGPUs || h.Free < 0 || h.Free > len(h.GPUs) {
		return bad("gpus", "%d GPUs with %d free is not a server", len(h.GPUs), h.Free)
	}
	seen := make(map[int]bool, len(h.GPUs))
	models := map[string]bool{}
	last := "" // a server's GPUs are mostly of one model: folded once
	for i, g := range h.GPUs {
		switch {
		case g.Index < 0 || seen[g.Index]:
			return bad(fmt.Sprintf("gpus[%d].index", i), "%d is negative or repeated", g.Index)
		case g.Model == "" || len(g.Model) > maxModel:
			return bad(fmt.Sprintf("gpus[%d].model", i), "want 1..%d characters", maxModel)
		case g.MemoryMiB < 0:
			return bad(fmt.Sprintf("gpus[%d].memory_mib", i), "negative: %d", g.MemoryMiB)
		}
		seen[g.Index] = true
		if g.Model == last {
			continue
		}
		last = g.Model
		if models[contract.FoldModel(g.Model)] = true; len(models) > MaxServerModels {
			return bad(fmt.Sprintf("gpus[%d].model", i), "more than %d GPU models on one server", MaxServerModels)
		}
	}
	if len(h.Running) > MaxServerGPUs {
		return bad("running", "%d contracts on %d GPUs", len(h.Running), len(h.GPUs))
	}
	for i, id := range h.Running {
		if err := CheckID(id); err != nil {
			return bad(fmt.Sprintf("running[%d]", i), "%v", err)
		}
	}
	// A server's settling contracts are those that ended on it lately:
	// no more than it could have run.
	if len(h.Settling) > MaxServerGPUs {
		return bad("settling", "%d contracts settling, more than %d", len(h.Settling), MaxServerGPUs)
	}
	for i, id := range h.Settling {
		if err := CheckID(id); err != nil {
			return bad(fmt.Sprintf("settling[%d]", i), "%v", err)
		}
	}
	if h.Heartbeat < 0 {
		return bad("heartbeat", "negative: %v", time.Duration(h.Heartbeat))
	}
	if len(h.Policy) > maxPolicy {
		return bad("policy", "longer than %d characters", maxPolicy)
	}
	if h.Runs != nil {
		if err := h.Runs.Check(); err != nil {
			return err
		}
	}
	if h.Ask != nil {
		return h.Ask.Check(h.GPUs)
	}
	return nil
}

// DecodeHello reads a hello or heartbeat strictly (Unmarshal) and checks
// it.
func DecodeHello(data []byte) (Hello, error) {
	var h Hello
	if err := Unmarshal(data, &h); err != nil {
		return Hello{}, err
	}
	if err := h.Check(); err != nil {
		return Hello{}, err
	}
	return h, nil
}
