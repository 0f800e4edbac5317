package agent

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/bourse/bourse/server"
)

// learningFile holds what a learning policy has learned, in the outbox's
// directory beside the bookings: its state must outlive a restart, or
// every restart would start its exploration again.
const learningFile = "learning.json"

// restoreLearning gives the learner what the agent's last run saved. A
// state it refuses (another grid, a file of another kind) is logged and
// the learner starts afresh: what it learned is lost, not the server.
func (a *Agent) restoreLearning() error {
	l := server.LearnerOf(a.cfg.Policy)
	if l == nil || a.outbox == nil {
		return nil
	}
	data, err := a.outbox.LoadFile(learningFile)
	if err != nil || data == nil {
		return err
	}
	if err := l.Restore(data); err != nil {
		a.log.Error("the learning policy's state of the last run not restored; it learns afresh", "file", learningFile, "err", err)
		return nil
	}
	a.learnSaved = l.Epochs()
	a.log.Info("the learning policy's state of the last run restored", "epochs", a.learnSaved)
	return nil
}

// learned does what a learner asks after a tick: the exchange hears of a
// new price soon (routing follows asks), and at each new epoch the log
// says what the learner believes and its state goes to disk.
func (a *Agent) learned(askChanged bool) {
	l := server.LearnerOf(a.cfg.Policy)
	if l == nil {
		return
	}
	if askChanged {
		a.changed()
	}
	if a.saveLearning(false) {
		a.log.Info("learning: a new epoch", beliefAttrs(l.Beliefs())...)
	}
}

// saveLearning writes the learner's state if it began an epoch since the
// last save, or always when final (at shutdown: what the last epoch
// taught counts too), and reports whether it wrote. Without an outbox
// the state is not kept, but each epoch is still reported.
func (a *Agent) saveLearning(final bool) bool {
	l := server.LearnerOf(a.cfg.Policy)
	if l == nil {
		return false
	}
	a.learnMu.Lock()
	defer a.learnMu.Unlock()
	epochs := l.Epochs()
	if !final && epochs == a.learnSaved {
		return false
	}
	a.learnSaved = epochs
	if a.outbox == nil {
		return true
	}
	data, err := l.State()
	if err == nil {
		err = a.outbox.SaveFile(learningFile, data)
	}
	if err != nil {
		a.log.Error("the learning policy's state not saved: a restart would lose what it learned since", "err", err)
	}
	return true
}

// beliefAttrs are a learner's beliefs as log attributes: the level it
// posts, and per level its multiplier, the contracts started there, and
// what it believes the level would earn an hour were it posted for good.
func beliefAttrs(b server.Beliefs) []any {
	var levels []string
	for _, lv := range b.Levels {
		levels = append(levels, fmt.Sprintf("×%s: %d started, %.4g an hour", lv.Multiplier, lv.Starts, lv.EarnPerHour))
	}
	return []any{slog.String("multiplier", b.Multiplier.String()), slog.Int("level", b.Level), slog.Int("epoch", b.Epochs),
		slog.Time("until", b.EpochEnds), slog.String("levels", strings.Join(levels, "; "))}
}
