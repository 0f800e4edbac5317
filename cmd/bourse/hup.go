package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// onHUP runs reload on each SIGHUP until stop, logging what it did: the
// way to make a running process read a file again (the console's users,
// the exchange's server keys).
func onHUP(what string, reload func() error, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-hup:
			}
			if err := reload(); err != nil {
				log.Error(what+" not reloaded: the old ones stay", "err", err)
				continue
			}
			log.Info(what + " reloaded")
		}
	}()
	return func() { signal.Stop(hup); close(done) }
}
