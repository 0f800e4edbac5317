package exchange

import "time"

// pauses tells the sweep when silence proves nothing. While the House has
// not been running (just started, or its process stopped by SIGSTOP, a VM
// pause or starvation), or its driver was cut off (NATS down), readings
// wait in the stream, and those handed to an instance that died come back
// after AckWait: silence is judged only once a whole ServerLostAfter has
// passed since the House last ran late.
type pauses struct {
	outage time.Time // when the House was last seen not running
	last   time.Time // when the last sweep ended
}

// late is how far past its time a sweep may begin, or how long one may
// run, before the House counts as not having run meanwhile.
func late(every time.Duration) time.Duration { return 2*every + time.Second }

// begin records a sweep beginning at now and reports whether it may judge
// silence since silentSince.
func (p *pauses) begin(now time.Time, every time.Duration, silentSince time.Time) bool {
	if now.Sub(p.last) > late(every) {
		p.outage = now
	}
	return !p.outage.After(silentSince)
}

// end records a sweep that began at began ending at now. A sweep that
// ran long may have been paused in the middle (a SIGSTOP during its
// database calls): the readings that came meanwhile are yet to be
// counted, so it counts as an outage too. A sweep slowed by a slow
// database only delays the next judgement; the readings come through that
// database as well.
func (p *pauses) end(began, now time.Time, every time.Duration) {
	if now.Sub(began) > late(every) {
		p.outage = now
	}
	p.last = now
}

// cutOff records that the House cannot hear readings now (NATS is down).
func (p *pauses) cutOff(now time.Time) { p.outage = now }
