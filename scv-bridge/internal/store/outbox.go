package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// State is an outbox row's state.
type State string

// Outbox states: a row starts pending and ends sent or dead; held rows
// wait for a release (a platform that allows no unprompted send now).
const (
	Pending State = "pending"
	Sent    State = "sent"
	Held    State = "held"
	Dead    State = "dead"
)

// Outbound is one outbox row: a message to deliver.
type Outbound struct {
	// ID is the row id and the platform's idempotency key (Feishu's uuid,
	// iLink's client_id): at most 32 bytes, unique across databases.
	ID string `json:"id"`
	// Conversation is the conversation key the message belongs to.
	Conversation string `json:"conversation"`
	// Kind says what the payload is to the adapter (text, reply, file…).
	Kind string `json:"kind"`
	// Payload is the message as the adapter wants it.
	Payload json.RawMessage `json:"payload"`
	State   State           `json:"state"`
	// Attempts counts failed sends.
	Attempts int `json:"attempts,omitempty"`
	// LastError is the last failure, for `scv channels status` and logs.
	LastError string `json:"last_error,omitempty"`
	// Key is the caller's unique key of the row (Row.Key), "" for none.
	Key string `json:"key,omitempty"`
	// PlatformID is the platform's id of the sent message.
	PlatformID string    `json:"platform_id,omitempty"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
}

// newRowID is "o" + 15 random hex digits + "-" + the sequence in hex: the
// random part keeps keys unique when a database is recreated (the platform
// remembers keys for an hour), the sequence keeps them unique within one.
func newRowID(seq uint64) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return fmt.Sprintf("o%s-%x", hex.EncodeToString(b[:])[:15], seq), nil
}

// Enqueue stores a pending row and returns it with its id. The row is on
// disk before Enqueue returns; a crash after that is delivered on restart.
func (s *Store) Enqueue(conversation, kind string, payload json.RawMessage) (Outbound, error) {
	return s.enqueue(conversation, kind, payload, Pending)
}

// EnqueueHeld stores a row in the held state (see Release).
func (s *Store) EnqueueHeld(conversation, kind string, payload json.RawMessage) (Outbound, error) {
	return s.enqueue(conversation, kind, payload, Held)
}

func (s *Store) enqueue(conversation, kind string, payload json.RawMessage, st State) (Outbound, error) {
	var o Outbound
	err := s.db.Update(func(tx *bolt.Tx) error {
		var err error
		o, err = enqueueTx(tx, s.now().UTC(), conversation, kind, payload, st)
		return err
	})
	if err != nil {
		return Outbound{}, fmt.Errorf("queue a message for %s: %w", conversation, err)
	}
	return o, nil
}

func enqueueTx(tx *bolt.Tx, now time.Time, conversation, kind string, payload json.RawMessage, st State) (Outbound, error) {
	return enqueueKeyedTx(tx, now, Row{Conversation: conversation, Kind: kind, Payload: payload}, st)
}

func enqueueKeyedTx(tx *bolt.Tx, now time.Time, r Row, st State) (Outbound, error) {
	conversation, kind, payload := r.Conversation, r.Kind, r.Payload
	b := tx.Bucket(bucketOutbox)
	seq, err := b.NextSequence()
	if err != nil {
		return Outbound{}, err
	}
	id, err := newRowID(seq)
	if err != nil {
		return Outbound{}, err
	}
	o := Outbound{ID: id, Conversation: conversation, Kind: kind, Payload: payload, Key: r.Key, State: st, Created: now, Updated: now}
	data, err := json.Marshal(o)
	if err != nil {
		return Outbound{}, err
	}
	if err := b.Put(seqKey(seq), data); err != nil {
		return Outbound{}, err
	}
	if r.Key != "" {
		if err := tx.Bucket(bucketOutKeys).Put([]byte(r.Key), seqKey(seq)); err != nil {
			return Outbound{}, err
		}
	}
	return o, tx.Bucket(bucketOutIDs).Put([]byte(id), seqKey(seq))
}

// Row is a message to queue with CompleteRows.
type Row struct {
	Conversation string
	Kind         string
	Payload      json.RawMessage
	// Key, when set, is unique among the rows the outbox holds: a row
	// whose key is already queued (or sent, until pruned) is not queued
	// again. The bridge keys each chat_attach file by its outbox record, so
	// finding the record again after a crash sends the file once.
	Key string
}

// RowByKey returns the row queued under key (Row.Key).
func (s *Store) RowByKey(key string) (Outbound, bool, error) {
	var o Outbound
	found := false
	err := s.db.View(func(tx *bolt.Tx) error {
		k := tx.Bucket(bucketOutKeys).Get([]byte(key))
		if k == nil {
			return nil
		}
		data := tx.Bucket(bucketOutbox).Get(k)
		if data == nil {
			return nil
		}
		found = true
		return json.Unmarshal(data, &o)
	})
	if err != nil {
		return Outbound{}, false, fmt.Errorf("look up the outbox row %s: %w", key, err)
	}
	return o, found, nil
}

// Rows returns the rows in state st, oldest first ("" for all).
func (s *Store) Rows(st State) ([]Outbound, error) {
	var out []Outbound
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketOutbox).ForEach(func(_, v []byte) error {
			var o Outbound
			if err := json.Unmarshal(v, &o); err != nil {
				return err
			}
			if st == "" || o.State == st {
				out = append(out, o)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list the outbox: %w", err)
	}
	return out, nil
}

// Counts returns how many rows are in each state.
func (s *Store) Counts() (map[State]int, error) {
	rows, err := s.Rows("")
	if err != nil {
		return nil, err
	}
	c := map[State]int{}
	for _, r := range rows {
		c[r.State]++
	}
	return c, nil
}

// update applies f to the row id in one transaction.
func (s *Store) update(id string, f func(*Outbound) error) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		k := tx.Bucket(bucketOutIDs).Get([]byte(id))
		if k == nil {
			return ErrNotFound
		}
		b := tx.Bucket(bucketOutbox)
		var o Outbound
		if err := json.Unmarshal(b.Get(k), &o); err != nil {
			return err
		}
		if err := f(&o); err != nil {
			return err
		}
		o.Updated = s.now().UTC()
		data, err := json.Marshal(o)
		if err != nil {
			return err
		}
		return b.Put(append([]byte(nil), k...), data)
	})
}

// errFinal refuses a change to a row that is already sent or dead.
var errFinal = errors.New("the row is already final")

// MarkSent records that the platform accepted row id as platformID.
func (s *Store) MarkSent(id, platformID string) error {
	err := s.update(id, func(o *Outbound) error {
		if o.State == Dead {
			return errFinal
		}
		o.State, o.PlatformID, o.LastError = Sent, platformID, ""
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark outbox row %s sent: %w", id, err)
	}
	return nil
}

// MarkFailed records a failed attempt; the row stays pending.
func (s *Store) MarkFailed(id string, cause error) error {
	err := s.update(id, func(o *Outbound) error {
		if o.State == Sent || o.State == Dead {
			return errFinal
		}
		o.Attempts++
		o.LastError = cause.Error()
		return nil
	})
	if err != nil {
		return fmt.Errorf("record a failed send of outbox row %s: %w", id, err)
	}
	return nil
}

// MarkDead gives row id up: a refusal that retrying cannot change, or too
// many attempts. It is kept for status and never sent.
func (s *Store) MarkDead(id string, cause error) error {
	err := s.update(id, func(o *Outbound) error {
		if o.State == Sent {
			return errFinal
		}
		o.State, o.LastError = Dead, cause.Error()
		return nil
	})
	if err != nil {
		return fmt.Errorf("give up outbox row %s: %w", id, err)
	}
	return nil
}

// Release turns the held rows of conversation pending again (the
// platform allows sending now) and returns how many.
func (s *Store) Release(conversation string) (int, error) {
	rows, err := s.Rows(Held)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		if r.Conversation != conversation {
			continue
		}
		err := s.update(r.ID, func(o *Outbound) error {
			if o.State == Held {
				o.State = Pending
				n++
			}
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("release outbox row %s: %w", r.ID, err)
		}
	}
	return n, nil
}

// PruneOutbox removes sent and dead rows last changed before keep ago.
func (s *Store) PruneOutbox(keep time.Duration) (int, error) {
	cut := s.now().Add(-keep)
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, ids := tx.Bucket(bucketOutbox), tx.Bucket(bucketOutIDs)
		var gone []Outbound
		var keys [][]byte
		err := b.ForEach(func(k, v []byte) error {
			var o Outbound
			if json.Unmarshal(v, &o) == nil && (o.State == Sent || o.State == Dead) && o.Updated.Before(cut) {
				gone = append(gone, o)
				keys = append(keys, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
			if err := ids.Delete([]byte(gone[i].ID)); err != nil {
				return err
			}
			if gone[i].Key != "" {
				if err := tx.Bucket(bucketOutKeys).Delete([]byte(gone[i].Key)); err != nil {
					return err
				}
			}
		}
		n = len(keys)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune the outbox: %w", err)
	}
	return n, nil
}

// Complete records in one transaction that the inbound events ids are
// processed and queues their answer (when kind is not empty), so a crash
// can neither answer twice (the events would be resumed) nor lose the
// answer (it would be marked processed without one).
func (s *Store) Complete(ids []string, conversation, kind string, payload json.RawMessage) (Outbound, error) {
	var rows []Row
	if kind != "" {
		rows = []Row{{Conversation: conversation, Kind: kind, Payload: payload}}
	}
	out, err := s.CompleteRows(ids, rows...)
	if err != nil {
		return Outbound{}, fmt.Errorf("complete a turn of %s: %w", conversation, err)
	}
	if len(out) == 0 {
		return Outbound{}, nil
	}
	return out[0], nil
}

// CompleteRows is Complete with any number of rows (an answer and the
// files that go with it), queued in order. A row whose Key is already in
// the outbox is left out of the result and not queued again.
func (s *Store) CompleteRows(ids []string, rows ...Row) ([]Outbound, error) {
	var out []Outbound
	err := s.db.Update(func(tx *bolt.Tx) error {
		out = out[:0]
		for _, r := range rows {
			if r.Key != "" && tx.Bucket(bucketOutKeys).Get([]byte(r.Key)) != nil {
				continue
			}
			o, err := enqueueKeyedTx(tx, s.now().UTC(), r, Pending)
			if err != nil {
				return err
			}
			out = append(out, o)
		}
		for _, id := range ids {
			if err := markProcessedTx(tx, id, s.now().UTC()); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record a finished turn: %w", err)
	}
	return out, nil
}

// Reschedule records what became of a row a platform could send only
// part of, or none of, now. With rest nil the row itself moves to state st
// (Held or Pending); with rest set the row is marked sent (its first part
// went out under its id) and rest is queued as a new row in state st, in
// one transaction, so a crash neither resends the sent part nor loses the
// rest.
func (s *Store) Reschedule(id string, rest json.RawMessage, st State) (Outbound, error) {
	if st != Held && st != Pending {
		return Outbound{}, fmt.Errorf("reschedule outbox row %s: the state must be held or pending, not %q", id, st)
	}
	var out Outbound
	err := s.db.Update(func(tx *bolt.Tx) error {
		o, k, err := getTx(tx, id)
		if err != nil {
			return err
		}
		if o.State == Sent || o.State == Dead {
			return errFinal
		}
		now := s.now().UTC()
		if rest == nil {
			o.State = st
		} else {
			o.State, o.PlatformID, o.LastError = Sent, "part", ""
			if out, err = enqueueTx(tx, now, o.Conversation, o.Kind, rest, st); err != nil {
				return err
			}
		}
		o.Updated = now
		return putTx(tx, k, o)
	})
	if err != nil {
		return Outbound{}, fmt.Errorf("reschedule outbox row %s: %w", id, err)
	}
	return out, nil
}

// Flush queues the held rows of conversation whose kind is kind as one
// pending row whose payload merge makes from them (oldest first), and
// marks them sent (their content goes out in the merged row); held rows
// of other kinds (files) cannot be merged, so they turn pending again in
// their place. All in one transaction. It returns the new row and how
// many were merged; none held of kind gives a zero row.
func (s *Store) Flush(conversation, kind string, merge func([]Outbound) (kind string, payload json.RawMessage, err error)) (Outbound, int, error) {
	var out Outbound
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		var held, other []Outbound
		var keys, otherKeys [][]byte
		now := s.now().UTC()
		// The bucket is changed only after the walk (bbolt forbids it during).
		err := tx.Bucket(bucketOutbox).ForEach(func(k, v []byte) error {
			var o Outbound
			if err := json.Unmarshal(v, &o); err != nil {
				return err
			}
			switch {
			case o.State != Held || o.Conversation != conversation:
			case o.Kind != kind:
				other = append(other, o)
				otherKeys = append(otherKeys, append([]byte(nil), k...))
			default:
				held = append(held, o)
				keys = append(keys, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, o := range other {
			o.State, o.Updated = Pending, now
			if err := putTx(tx, otherKeys[i], o); err != nil {
				return err
			}
		}
		if len(held) == 0 {
			return nil
		}
		mkind, payload, err := merge(held)
		if err != nil {
			return err
		}
		if out, err = enqueueTx(tx, now, conversation, mkind, payload, Pending); err != nil {
			return err
		}
		for i, o := range held {
			o.State, o.PlatformID, o.Updated = Sent, "merged:"+out.ID, now
			if err := putTx(tx, keys[i], o); err != nil {
				return err
			}
		}
		n = len(held)
		return nil
	})
	if err != nil {
		return Outbound{}, 0, fmt.Errorf("flush the held messages of %s: %w", conversation, err)
	}
	return out, n, nil
}

func getTx(tx *bolt.Tx, id string) (Outbound, []byte, error) {
	k := tx.Bucket(bucketOutIDs).Get([]byte(id))
	if k == nil {
		return Outbound{}, nil, ErrNotFound
	}
	var o Outbound
	if err := json.Unmarshal(tx.Bucket(bucketOutbox).Get(k), &o); err != nil {
		return Outbound{}, nil, err
	}
	return o, append([]byte(nil), k...), nil
}

func putTx(tx *bolt.Tx, k []byte, o Outbound) error {
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketOutbox).Put(k, data)
}
