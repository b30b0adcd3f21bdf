// Package store is the bridge's embedded database (bbolt): inbound events
// persisted before they are acknowledged and deduplicated by the
// platform's message id, and the durable outbox whose row id is the
// platform's idempotency key. Every write is one fsynced bbolt
// transaction, so what a method returned survives a crash.
package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// MinDedupWindow is the shortest time a processed inbound event is
// remembered: a platform redelivers within hours, and the issue asks for
// at least 7 days.
const MinDedupWindow = 7 * 24 * time.Hour

var (
	bucketInbound = []byte("inbound")    // platform message id -> Inbound JSON
	bucketArrival = []byte("arrival")    // seq (big-endian) -> message id, unprocessed only
	bucketOutbox  = []byte("outbox")     // seq (big-endian) -> Outbound JSON
	bucketOutIDs  = []byte("outbox_id")  // row id -> seq
	bucketOutKeys = []byte("outbox_key") // caller's unique key -> seq (Row.Key)
)

// ErrLocked is returned by Open when another process holds the database:
// one bridge per (channel, account).
var ErrLocked = errors.New("another scv-bridge holds this account's database")

// ErrNotFound is returned for an id the store does not hold.
var ErrNotFound = errors.New("no such entry")

// Store is an open bridge database. It is safe for concurrent use.
type Store struct {
	db  *bolt.DB
	now func() time.Time
}

// Options configure Open.
type Options struct {
	// LockTimeout is how long Open waits for another process's lock
	// (default 1 s).
	LockTimeout time.Duration
	// Now is the clock (default time.Now); tests inject one.
	Now func() time.Time
}

// Open opens (creating it 0600, its directory 0700) the database at path.
// bbolt takes an exclusive flock on the file, which is also the bridge's
// lock per (channel, account): a second bridge gets ErrLocked.
func Open(path string, o Options) (*Store, error) {
	if o.LockTimeout <= 0 {
		o.LockTimeout = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the bridge's state directory: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.LockTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open the bridge database %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketInbound, bucketArrival, bucketOutbox, bucketOutIDs, bucketOutKeys} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("prepare the bridge database %s: %w", path, err)
	}
	return &Store{db: db, now: o.Now}, nil
}

// Close closes the database and releases its lock.
func (s *Store) Close() error { return s.db.Close() }

func seqKey(n uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], n)
	return k[:]
}

// Inbound is an event as the bridge stored it.
type Inbound struct {
	// ID is the platform's message id, the deduplication key.
	ID string `json:"id"`
	// Conversation is the conversation key the core routes by.
	Conversation string `json:"conversation"`
	// Payload is the platform event, as the adapter encoded it.
	Payload json.RawMessage `json:"payload"`
	// Received is when the bridge stored it.
	Received time.Time `json:"received"`
	// Processed is when the core finished it; zero while pending.
	Processed time.Time `json:"processed,omitzero"`
	seq       uint64
}

// PutInbound stores ev before it is acknowledged. It reports false when
// an event with that id was stored before (a redelivery), which the
// caller acknowledges and drops.
func (s *Store) PutInbound(ev Inbound) (bool, error) {
	if ev.ID == "" {
		return false, errors.New("store: an inbound event needs its platform message id")
	}
	fresh := false
	err := s.db.Update(func(tx *bolt.Tx) error {
		in := tx.Bucket(bucketInbound)
		if in.Get([]byte(ev.ID)) != nil {
			return nil
		}
		fresh = true
		arr := tx.Bucket(bucketArrival)
		seq, err := arr.NextSequence()
		if err != nil {
			return err
		}
		ev.Received = s.now().UTC()
		ev.Processed = time.Time{}
		data, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if err := in.Put([]byte(ev.ID), data); err != nil {
			return err
		}
		return arr.Put(seqKey(seq), []byte(ev.ID))
	})
	if err != nil {
		return false, fmt.Errorf("store the inbound event %s: %w", ev.ID, err)
	}
	return fresh, nil
}

// MarkProcessed records that the core finished the event id: it is no
// longer returned by Unprocessed, and is still deduplicated.
func (s *Store) MarkProcessed(id string) error {
	err := s.db.Update(func(tx *bolt.Tx) error { return markProcessedTx(tx, id, s.now().UTC()) })
	if err != nil {
		return fmt.Errorf("mark the inbound event %s processed: %w", id, err)
	}
	return nil
}

func markProcessedTx(tx *bolt.Tx, id string, now time.Time) error {
	in := tx.Bucket(bucketInbound)
	data := in.Get([]byte(id))
	if data == nil {
		return ErrNotFound
	}
	var ev Inbound
	if err := json.Unmarshal(data, &ev); err != nil {
		return err
	}
	if !ev.Processed.IsZero() {
		return nil
	}
	ev.Processed = now
	out, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	if err := in.Put([]byte(id), out); err != nil {
		return err
	}
	return deleteArrival(tx.Bucket(bucketArrival), id)
}

// deleteArrival removes id from the arrival index. The index holds only
// unprocessed events, so the scan is short.
func deleteArrival(arr *bolt.Bucket, id string) error {
	c := arr.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if string(v) == id {
			return c.Delete()
		}
	}
	return nil
}

// Unprocessed returns the events not yet processed, in arrival order: what
// the core resumes after a restart.
func (s *Store) Unprocessed() ([]Inbound, error) {
	var out []Inbound
	err := s.db.View(func(tx *bolt.Tx) error {
		in := tx.Bucket(bucketInbound)
		return tx.Bucket(bucketArrival).ForEach(func(k, v []byte) error {
			data := in.Get(v)
			if data == nil {
				return nil
			}
			var ev Inbound
			if err := json.Unmarshal(data, &ev); err != nil {
				return fmt.Errorf("decode the inbound event %s: %w", v, err)
			}
			ev.seq = binary.BigEndian.Uint64(k)
			out = append(out, ev)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list unprocessed inbound events: %w", err)
	}
	return out, nil
}

// PruneInbound forgets processed events older than keep (at least
// MinDedupWindow, whatever is asked) and returns how many it removed.
// Unprocessed events are never removed.
func (s *Store) PruneInbound(keep time.Duration) (int, error) {
	keep = max(keep, MinDedupWindow)
	cut := s.now().Add(-keep)
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		in := tx.Bucket(bucketInbound)
		// Collect first: deleting while a bbolt cursor walks skips keys.
		var old [][]byte
		err := in.ForEach(func(k, v []byte) error {
			var ev Inbound
			if json.Unmarshal(v, &ev) == nil && !ev.Processed.IsZero() && ev.Received.Before(cut) {
				old = append(old, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range old {
			if err := in.Delete(k); err != nil {
				return err
			}
		}
		n = len(old)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune inbound events: %w", err)
	}
	return n, nil
}

// PutAnswered stores ev as already processed together with its answer
// (queued pending when kind is not empty), in one transaction: for an
// event the adapter answers itself (an approval code), which must be
// deduplicated and must never be resumed into a model's turn. It reports
// false, queuing nothing, for an event stored before.
func (s *Store) PutAnswered(ev Inbound, kind string, payload json.RawMessage) (bool, error) {
	if ev.ID == "" {
		return false, errors.New("store: an inbound event needs its platform message id")
	}
	fresh := false
	err := s.db.Update(func(tx *bolt.Tx) error {
		in := tx.Bucket(bucketInbound)
		if in.Get([]byte(ev.ID)) != nil {
			return nil
		}
		fresh = true
		now := s.now().UTC()
		ev.Received, ev.Processed = now, now
		data, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if err := in.Put([]byte(ev.ID), data); err != nil {
			return err
		}
		if kind == "" {
			return nil
		}
		_, err = enqueueTx(tx, now, ev.Conversation, kind, payload, Pending)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store the answered event %s: %w", ev.ID, err)
	}
	return fresh, nil
}
