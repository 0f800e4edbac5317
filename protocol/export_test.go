package protocol

// AppendEvent is Event.appendJSON, for tests that its fast path is taken.
func AppendEvent(e Event, b []byte) ([]byte, bool) { return e.appendJSON(b) }
