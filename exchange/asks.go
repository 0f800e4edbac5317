package exchange

import (
	"math/bits"
	"slices"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// asks is the registry's index of the servers' asks, by which an offer is
// routed to a few servers without looking at every one: per currency, the
// classes of the servers' GPUs in price levels, cheapest first, each
// level holding apart the classes with room (a GPU free, or one running
// preemptible work on a server that preempts) and those without. A
// heartbeat that changes neither a class's price nor whether it has room
// changes nothing here. Servers that say no ask (older than asks) sit in
// a level of their own after every price, their classes made up from
// their GPUs and free count.
//
// It holds no lock of its own: the registry's guards it.
type asks struct {
	books map[askKey]*askBook
	// at is where each server's classes are, to take them out when it
	// speaks again.
	at map[string][]askSlot
}

// askKey names a book of asks: a currency and a GPU model, folded, since
// models match without case (contract.Class.Fits).
type askKey struct{ currency, model string }

// askBook is the asks of one currency and model.
type askBook struct {
	levels []*askLevel // by price; the unpriced level, if any, last
}

// askLevel is the classes asking one price: those with room by how much
// (bucket b holds room from 2^b to 2^(b+1)−1 GPUs), and those without, so
// that an offer of g GPUs looks first at classes that can have them and
// last, if at all, at those that cannot.
type askLevel struct {
	rank askRank
	room [roomBuckets][]askRef
	full []askRef
	n    int // classes filed here
}

// roomBuckets is how many buckets of room a level has: enough for
// protocol.MaxServerGPUs.
const roomBuckets = 13

// bucket is the bucket of room r > 0; -1 (full) for none.
func bucket(r int) int {
	if r <= 0 {
		return -1
	}
	return min(bits.Len(uint(r))-1, roomBuckets-1)
}

// list is the list of bucket b, -1 the full classes'.
func (l *askLevel) list(b int) *[]askRef {
	if b < 0 {
		return &l.full
	}
	return &l.room[b]
}

// askRef is one class of one server's ask.
type askRef struct {
	server string
	class  int // index into the server's ask's classes
}

// askSlot is where one of a server's classes sits: its level, which of
// the level's lists (its bucket of room) and where in it.
type askSlot struct {
	book   askKey
	level  *askLevel
	bucket int
	idx    int
}

// pricePlaces is how finely asks' prices are told apart for their order:
// finer than any price a curve names per GPU-second.
const pricePlaces = 24

// askRank is where a class's ask stands in the order in which routing
// (the index's levels), quotes and matching (candidates,
// counterWaiting) alike consider asks: cheapest first, by ClassAsk.Price
// to pricePlaces, and those that name no price after every priced one.
type askRank struct {
	priced bool
	price  decimal.Decimal // unused where not priced
}

// rankOf is class c's rank.
func rankOf(c contract.ClassAsk) askRank {
	if !c.Priced() {
		return askRank{}
	}
	return askRank{priced: true, price: c.Price().Decimal(pricePlaces)}
}

// cmp orders a before b (-1), with it (0) or after it (+1).
func (a askRank) cmp(b askRank) int {
	switch {
	case a.priced != b.priced:
		if a.priced {
			return -1
		}
		return 1
	case !a.priced:
		return 0
	}
	return a.price.Cmp(b.price)
}

func newAsks() *asks {
	return &asks{books: map[askKey]*askBook{}, at: map[string][]askSlot{}}
}

// runsOf is what a server's hello says it runs, read by contract's rule
// of which jobs it takes (contract.Runs.Takes).
func runsOf(h protocol.Hello) *contract.Runs { return (*contract.Runs)(h.Runs) }

// askOf is the ask a server's hello says, or one made up from its GPUs
// and free count for a server that says none: a class per model and
// memory, unpriced, its free GPUs those of the server up to the class's.
func askOf(h protocol.Hello) *contract.Ask {
	if h.Ask != nil {
		return (*contract.Ask)(h.Ask)
	}
	a := &contract.Ask{}
	for _, g := range h.GPUs {
		i := slices.IndexFunc(a.Classes, func(c contract.ClassAsk) bool { return c.Model == g.Model && c.MemoryMiB == g.MemoryMiB })
		if i < 0 {
			a.Classes = append(a.Classes, contract.ClassAsk{Model: g.Model, MemoryMiB: g.MemoryMiB})
			i = len(a.Classes) - 1
		}
		a.Classes[i].GPUs++
	}
	for i := range a.Classes {
		a.Classes[i].Free = min(h.Free, a.Classes[i].GPUs)
	}
	return a
}

// put files server's classes as its hello h says, in place of what it
// said before (old, nil if nothing). Classes whose price and room are as
// before stay where they are.
func (x *asks) put(server string, old *protocol.Hello, h protocol.Hello) {
	a := askOf(h)
	if old != nil && x.same(server, *old, h, a) {
		return
	}
	x.drop(server)
	slots := make([]askSlot, len(a.Classes))
	for i, c := range a.Classes {
		key := askKey{h.Currency, contract.FoldModel(c.Model)}
		book := x.books[key]
		if book == nil {
			book = &askBook{}
			x.books[key] = book
		}
		l := book.level(c)
		b := bucket(a.MostRoom(c))
		list := l.list(b)
		*list = append(*list, askRef{server: server, class: i})
		l.n++
		slots[i] = askSlot{book: key, level: l, bucket: b, idx: len(*list) - 1}
	}
	x.at[server] = slots
}

// same says whether the index files h as it filed old: the same
// currency, classes, prices and room.
func (x *asks) same(server string, old, h protocol.Hello, a *contract.Ask) bool {
	slots := x.at[server]
	if old.Currency != h.Currency || len(slots) != len(a.Classes) {
		return false
	}
	oa := askOf(old)
	if len(oa.Classes) != len(a.Classes) {
		return false
	}
	for i, c := range a.Classes {
		o := oa.Classes[i]
		if o.Model != c.Model || o.MemoryMiB != c.MemoryMiB || bucket(a.MostRoom(c)) != slots[i].bucket ||
			!o.P.Equal(c.P) || !o.Q.Equal(c.Q) {
			return false
		}
	}
	return true
}

// drop takes server's classes out of the index, each in constant time:
// the last of its list takes its place.
func (x *asks) drop(server string) {
	slots := x.at[server]
	for i := range slots {
		s := slots[i]
		list := s.level.list(s.bucket)
		last := len(*list) - 1
		moved := (*list)[last]
		(*list)[s.idx] = moved
		*list = (*list)[:last]
		if moved.server != server || moved.class != i {
			x.at[moved.server][moved.class].idx = s.idx
		}
		if s.level.n--; s.level.n == 0 {
			book := x.books[s.book]
			book.levels = slices.DeleteFunc(book.levels, func(l *askLevel) bool { return l == s.level })
			if len(book.levels) == 0 {
				delete(x.books, s.book)
			}
		}
	}
	delete(x.at, server)
}

// level is the level of c's price, made if there is none.
func (b *askBook) level(c contract.ClassAsk) *askLevel {
	r := rankOf(c)
	i, found := slices.BinarySearchFunc(b.levels, r, func(l *askLevel, r askRank) int { return l.rank.cmp(r) })
	if found {
		return b.levels[i]
	}
	l := &askLevel{rank: r}
	b.levels = slices.Insert(b.levels, i, l)
	return l
}

// levels are the levels of the books of currency cur that class c may
// use, cheapest first, the unpriced last: one model's, or every model's
// for an offer that names none.
func (x *asks) levels(cur string, c contract.Class) []*askLevel {
	if c.Model != "" {
		if b := x.books[askKey{cur, contract.FoldModel(c.Model)}]; b != nil {
			return b.levels
		}
		return nil
	}
	var models []string
	for k := range x.books {
		if k.currency == cur {
			models = append(models, k.model)
		}
	}
	slices.Sort(models) // the same order on every run: a simulation's routing repeats
	var out []*askLevel
	for _, m := range models {
		out = append(out, x.books[askKey{cur, m}].levels...)
	}
	// Stable: levels of one price keep their models' order.
	slices.SortStableFunc(out, func(a, b *askLevel) int { return a.rank.cmp(b.rank) })
	return out
}

// priceAt1 is what terms t pay per GPU-second at full use of one GPU:
// an offer that meets an ask pays at least the ask's price so (Meets
// covers the ask's curves at one GPU, as at every rate up to its own),
// so no ask dearer than this can be met.
func priceAt1(t contract.Terms) decimal.Decimal {
	return contract.Terms{GPUs: 1, P: t.P, Q: t.Q}.FullUsePrice().Decimal(pricePlaces)
}
