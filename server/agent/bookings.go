package agent

import (
	"encoding/json"
	"fmt"

	"github.com/bourse/bourse/server"
)

// bookingsFile holds the confirmed bookings, in the outbox's directory: the
// server's state that must outlive a restart.
const bookingsFile = "bookings.json"

// restoreBookings gives the node the bookings the agent's last run saved.
// Bookings that no longer fit are dropped, and logged.
func (a *Agent) restoreBookings() error {
	data, err := a.outbox.LoadFile(bookingsFile)
	if err != nil || data == nil {
		return err
	}
	var saved []server.SavedBooking
	if err := json.Unmarshal(data, &saved); err != nil {
		// A torn file cannot be: it is renamed into place whole.
		return fmt.Errorf("server %s: %s: %w", a.id, bookingsFile, err)
	}
	if err := a.node.Restore(a.now(), saved); err != nil {
		a.log.Error("bookings of the last run not restored", "err", err)
	}
	_, a.savedGen = a.node.Bookings()
	if len(saved) > 0 {
		a.log.Info("bookings of the last run restored", "bookings", len(saved))
	}
	return nil
}

// saveBookings writes the node's confirmed bookings when they changed
// since the last save, replacing the file whole. A booking is saved before
// the start that confirms it is answered.
func (a *Agent) saveBookings() {
	if a.outbox == nil {
		return
	}
	a.bookMu.Lock()
	defer a.bookMu.Unlock()
	if a.node.BookingsGen() == a.savedGen {
		return
	}
	saved, gen := a.node.Bookings()
	data, err := json.Marshal(saved)
	if err == nil {
		err = a.outbox.SaveFile(bookingsFile, data)
	}
	if err != nil {
		a.log.Error("bookings not saved: a restart would lose them", "bookings", len(saved), "err", err)
		return
	}
	a.savedGen = gen
}
