package exchange

import (
	"context"
	"fmt"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// Files is where clients' files (contract.Files) wait for their
// contracts' servers: natsvc's object store, a bucket per client. The
// House asks it whether an offer's files are there before anything is
// escrowed; its driver hands a server the files of its own contracts
// (FilesOf) and removes them when no contract needs them (FilesInUse).
type Files interface {
	// Stored says whether client's files f are stored, whole and of f's
	// size: nil if they are, a *bourse.Error that says why not
	// otherwise.
	Stored(ctx context.Context, client string, f contract.Files) error
}

// DefaultFilesRate is the zero value of Config.FilesRate: 8 MiB a
// second, a gibibyte in about two minutes.
const DefaultFilesRate = 8 << 20

// checkFiles refuses an offer whose files are not stored where its
// server will fetch them, before anything is escrowed: the contract
// could only be voided at its start deadline.
func (h *House) checkFiles(ctx context.Context, client string, t contract.Terms) error {
	if t.Job == nil || t.Job.Files == nil {
		return nil
	}
	if h.cfg.Files == nil {
		return &bourse.Error{Code: bourse.EJobUnsupported, Field: "terms.job.files",
			Message: "this exchange keeps no files: offer the job without them"}
	}
	if err := h.cfg.Files.Stored(ctx, client, *t.Job.Files); err != nil {
		if bourse.ErrorCode(err) == bourse.EInternal {
			return fmt.Errorf("files of %s: %w", client, err)
		}
		return err
	}
	return nil
}

// filesTime is how much longer than Config.StartTimeout a contract with
// files has to start: its server fetches them first, at least
// Config.FilesRate bytes a second.
func (h *House) filesTime(t contract.Terms) time.Duration {
	if t.Job == nil || t.Job.Files == nil {
		return 0
	}
	secs := (t.Job.Files.Bytes + h.cfg.FilesRate - 1) / h.cfg.FilesRate
	return time.Duration(secs) * time.Second
}

// FilesOf is what server may fetch for contract id: its client and its
// files, for a contract of server's that names files and holds its
// escrow (accepted, or running). Any other is not found, whoever's it
// is, so that ids reveal nothing: a server is handed no other client's
// files, nor a contract's once it ended.
func (h *House) FilesOf(ctx context.Context, server, id string) (client string, f contract.Files, err error) {
	c, err := h.store.Contract(ctx, id)
	switch {
	case err != nil && bourse.ErrorCode(err) != bourse.ENotFound:
		return "", contract.Files{}, err
	case err != nil || c.Server != server || !c.HoldsEscrow() || c.Terms.Job == nil || c.Terms.Job.Files == nil:
		return "", contract.Files{}, &bourse.Error{Code: bourse.ENotFound, Field: "contract",
			Message: "no files of a contract " + id + " of this server's to fetch"}
	}
	return c.Client, *c.Terms.Job.Files, nil
}

// filesScan is how many of a client's latest contracts FilesInUse reads.
const filesScan = 1000

// FilesInUse says whether files f of client's may still be fetched: a
// contract of client's not yet ended, one suspended (or preempted) and
// not yet resumed, whose resume names them too, or an offer of client's
// waiting in the book, names them. Its driver removes them otherwise,
// once a contract that named them ends.
func (h *House) FilesInUse(ctx context.Context, client string, f contract.Files) (bool, error) {
	names := func(t contract.Terms) bool { return t.Job != nil && t.Job.Files != nil && *t.Job.Files == f }
	cs, err := h.store.Contracts(ctx, client, filesScan)
	if err != nil {
		return true, err
	}
	resumed := map[string]bool{}
	for _, c := range cs {
		if c.Resumes != "" {
			resumed[c.Resumes] = true
		}
	}
	for _, c := range cs {
		suspended := (c.Reason == contract.ReasonSuspended || c.Reason == contract.ReasonPreempted) && !resumed[c.ID]
		if (!c.State.Ended() || suspended) && names(c.Terms) {
			return true, nil
		}
	}
	ws, err := h.store.Book(ctx, BookQuery{Client: client})
	if err != nil {
		return true, err
	}
	for _, w := range ws {
		if names(w.Terms) {
			return true, nil
		}
	}
	return false, nil
}
