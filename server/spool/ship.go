package spool

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bourse/bourse/protocol"
)

// ship sends what is new of one contract's output, within the pass's
// budget, and records it in st.
func (s *Spool) ship(ctx context.Context, id string, st *state) error {
	dir := filepath.Join(s.cfg.Dir, id)
	// exit is written once the output is drained: checked before the
	// sizes, it says they are final.
	exited := s.exited(id)
	budget := chunksPerPass
	for _, f := range []struct {
		stream string
		sent   *int64
	}{{protocol.StreamStdout, &st.Stdout}, {protocol.StreamStderr, &st.Stderr}} {
		if err := s.send(ctx, id, protocol.PartLog, f.stream, filepath.Join(dir, f.stream), f.sent, &budget); err != nil {
			return err
		}
	}
	if !exited || budget == 0 {
		return nil
	}
	if !st.LogEnd {
		end := &protocol.OutputEnd{Stdout: st.Stdout, Stderr: st.Stderr, Cap: s.cfg.LogCap}
		if err := s.sendEnd(ctx, id, protocol.PartLog, end); err != nil {
			return err
		}
		st.LogEnd = true
	}
	if !st.Packed {
		omitted, err := pack(filepath.Join(dir, ResultsDir), filepath.Join(dir, archiveFile), s.cfg.ResultsCap)
		if err != nil {
			return fmt.Errorf("pack the results of %s: %w", id, err)
		}
		st.Packed, st.Omitted = true, omitted
		if len(omitted) > 0 {
			s.log.Warn("results left out of the archive", "contract", id, "omitted", omitted)
		}
	}
	archive := filepath.Join(dir, archiveFile)
	if err := s.send(ctx, id, protocol.PartResults, protocol.StreamResults, archive, &st.Results, &budget); err != nil {
		return err
	}
	if size, _ := fileSize(archive); st.Results < size {
		return nil // the budget ran out: the next pass goes on
	}
	if !st.ResultsEnd {
		end := &protocol.OutputEnd{Results: st.Results, Omitted: st.Omitted}
		if err := s.sendEnd(ctx, id, protocol.PartResults, end); err != nil {
			return err
		}
		st.ResultsEnd = true
	}
	st.Done = s.cfg.Now().UTC()
	s.log.Info("output sent", "contract", id, "stdout", st.Stdout, "stderr", st.Stderr, "results", st.Results)
	return nil
}

// send sends path's bytes from *sent on, in chunks, while the budget
// lasts, advancing *sent past each chunk the stream has.
func (s *Spool) send(ctx context.Context, id, part, stream, path string, sent *int64, budget *int) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil // nothing written (yet)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, protocol.MaxOutputChunk)
	for *budget > 0 {
		n, err := f.ReadAt(buf, *sent)
		if n == 0 {
			if err == nil || err == io.EOF {
				return nil
			}
			return err
		}
		c := Chunk{Contract: id, Part: part, Stream: stream, Offset: *sent, Data: buf[:n]}
		if err := s.cfg.Send(ctx, c); err != nil {
			return err
		}
		*sent += int64(n)
		*budget--
	}
	return nil
}

func (s *Spool) sendEnd(ctx context.Context, id, part string, end *protocol.OutputEnd) error {
	data, err := json.Marshal(end)
	if err != nil {
		return err
	}
	return s.cfg.Send(ctx, Chunk{Contract: id, Part: part, Stream: protocol.StreamEnd, Data: data, End: end})
}

func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
