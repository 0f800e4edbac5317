package server

// Reserve is the posted price policy p decides by in the state st: the
// least it takes, as offer curves. Every built-in policy prices by one
// (Utilization scales its base's curves with how full the server is;
// Learning posts the level it chose last;
// Preempting, Bookings and FairUse decide who runs and when, not at what
// price, and take their base's); ok is false for a policy of another
// kind. It is for reports that put what a contract paid beside what its
// server asked: contracts charge the offer's curves, which may be above
// the reserve.
func Reserve(p Policy, st View) (reserve Posted, ok bool) {
	switch p := p.(type) {
	case Posted:
		return p, true
	case Utilization:
		return p.PostedAt(st), true
	case *Learning:
		return p.Current(), true
	case Preempting:
		return Reserve(p.Base, st)
	case Bookings:
		return Reserve(p.Base, st)
	case FairUse:
		return Reserve(p.Base, st)
	}
	return Posted{}, false
}
