package housetest

import (
	"context"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// LyingMeter is Runner with a meter that lies: each of its jobs'
// measurements says Factor times the GPU use the job had (more than 1
// over-reports, the client's loss; less under-reports). Everything else
// is Runner's: it says what Runner runs and how Runner meters. A server
// that runs it is the dishonest party of canary tests.
type LyingMeter struct {
	Runner server.Runner
	Factor decimal.Decimal
}

var (
	_ server.Describer = LyingMeter{}
	_ server.Metered   = LyingMeter{}
)

// Start starts Runner's job and lies about its use.
func (l LyingMeter) Start(ctx context.Context, a server.Assignment) (server.Job, error) {
	j, err := l.Runner.Start(ctx, a)
	if err != nil {
		return nil, err
	}
	return lyingJob{Job: j, factor: l.Factor}, nil
}

// Runs is Runner's.
func (l LyingMeter) Runs() protocol.Runs {
	if d, ok := l.Runner.(server.Describer); ok {
		return d.Runs()
	}
	return protocol.Runs{}
}

// Meter is Runner's: the lie does not say it lies.
func (l LyingMeter) Meter() contract.Meter {
	if m, ok := l.Runner.(server.Metered); ok {
		return m.Meter()
	}
	return ""
}

type lyingJob struct {
	server.Job
	factor decimal.Decimal
}

func (j lyingJob) Measure() (server.Measurement, error) {
	m, err := j.Job.Measure()
	m.U = m.U.Mul(j.factor)
	return m, err
}
