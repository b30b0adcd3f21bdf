package ndjson

import "hash/maphash"

// RememberedRequestIDs is how many of a connection's latest request_ids
// the server remembers to refuse a repeat.
const RememberedRequestIDs = 16384

// requestIDs remembers the request_ids a connection used, so that a repeat
// is refused: events and errors are matched to requests by request_id, and
// two requests with one id would make every answer ambiguous. It keeps the
// last RememberedRequestIDs of them, as 128-bit digests (two seeded
// hashes), so its memory is bounded however long the connection lives and
// however long the ids are. Only the dispatch goroutine uses it.
type requestIDs struct {
	seeds [2]maphash.Seed
	ring  [][2]uint64 // in order of use, up to RememberedRequestIDs
	next  int         // where the next digest goes once the ring is full
	set   map[[2]uint64]struct{}
}

func newRequestIDs() *requestIDs {
	return &requestIDs{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, set: map[[2]uint64]struct{}{}}
}

// use records id and reports whether it is new on the connection.
func (r *requestIDs) use(id string) bool {
	d := [2]uint64{maphash.String(r.seeds[0], id), maphash.String(r.seeds[1], id)}
	if _, seen := r.set[d]; seen {
		return false
	}
	if len(r.ring) < RememberedRequestIDs {
		r.ring = append(r.ring, d)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = d
		r.next = (r.next + 1) % RememberedRequestIDs
	}
	r.set[d] = struct{}{}
	return true
}
