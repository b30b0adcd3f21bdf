package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRescheduleAndFlushHeldRows(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "b.db"), nil)
	defer s.Close()
	a, _ := s.Enqueue("c1", "text", json.RawMessage(`"a"`))
	b, _ := s.Enqueue("c1", "text", json.RawMessage(`"b"`))
	other, _ := s.Enqueue("c2", "text", json.RawMessage(`"x"`))
	file, _ := s.Enqueue("c1", "file", json.RawMessage(`"f"`))
	// a and the file are held whole; b went out in part, its rest is held.
	for _, id := range []string{a.ID, file.ID} {
		if _, err := s.Reschedule(id, nil, Held); err != nil {
			t.Fatal(err)
		}
	}
	rest, err := s.Reschedule(b.ID, json.RawMessage(`"b-rest"`), Held)
	if err != nil || rest.State != Held || rest.Conversation != "c1" {
		t.Fatalf("Reschedule with a rest = %+v, %v", rest, err)
	}
	if _, err := s.Reschedule(b.ID, nil, Held); err == nil {
		t.Fatal("a sent row was rescheduled")
	}
	if _, err := s.Reschedule(other.ID, nil, Dead); err == nil {
		t.Fatal("Reschedule accepted the dead state")
	}
	var merged []string
	row, n, err := s.Flush("c1", "text", func(rows []Outbound) (string, json.RawMessage, error) {
		for _, r := range rows {
			merged = append(merged, string(r.Payload))
		}
		return "text", json.RawMessage(`"merged"`), nil
	})
	if err != nil || n != 2 || strings.Join(merged, ",") != `"a","b-rest"` || row.State != Pending {
		t.Fatalf("Flush = %+v, %d, %v (merged %v)", row, n, err, merged)
	}
	// The file is not merged: it is pending again, in its place.
	pending, _ := s.Rows(Pending)
	if len(pending) != 3 || pending[0].ID != other.ID || pending[1].ID != file.ID || string(pending[1].Payload) != `"f"` ||
		string(pending[2].Payload) != `"merged"` {
		t.Fatalf("pending after the flush: %+v", pending)
	}
	if held, _ := s.Rows(Held); len(held) != 0 {
		t.Fatalf("held after the flush: %+v", held)
	}
	if _, n, err := s.Flush("c1", "text", nil); err != nil || n != 0 {
		t.Fatalf("a flush with nothing held = %d, %v", n, err)
	}
}

func TestPutAnsweredIsProcessedAndDeduplicated(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "b.db"), nil)
	defer s.Close()
	ev := Inbound{ID: "m1", Conversation: "c", Payload: json.RawMessage(`{}`)}
	for i, want := range []bool{true, false} {
		fresh, err := s.PutAnswered(ev, "text", json.RawMessage(`"answer"`))
		if err != nil || fresh != want {
			t.Fatalf("PutAnswered #%d = %v, %v; want %v", i+1, fresh, err, want)
		}
	}
	if un, _ := s.Unprocessed(); len(un) != 0 {
		t.Fatalf("an answered event would be resumed: %+v", un)
	}
	if rows, _ := s.Rows(Pending); len(rows) != 1 {
		t.Fatalf("answers queued: %+v; want one", rows)
	}
	if fresh, _ := s.PutInbound(ev); fresh {
		t.Fatal("PutInbound took an answered event as fresh")
	}
}

// TestDelivererDefersAndHolds: a deferral counts no attempt, keeps the
// row pending and blocks its conversation; a hold moves it to held.
func TestDelivererDefersAndHolds(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "b.db"), nil)
	defer s.Close()
	d1, _ := s.Enqueue("c1", "text", json.RawMessage(`"one"`))
	d2, _ := s.Enqueue("c1", "text", json.RawMessage(`"two"`))
	h, _ := s.Enqueue("c2", "text", json.RawMessage(`"held"`))
	until := time.Now().Add(time.Hour)
	var calls []string
	d := NewDeliverer(s, func(_ context.Context, o Outbound) (string, error) {
		calls = append(calls, o.ID)
		if o.Conversation == "c1" {
			return "", &DeferError{Until: until, Err: errors.New("throttled")}
		}
		return "", &HoldError{Err: errors.New("over budget")}
	})
	for range 3 {
		if failed, err := d.Pass(context.Background()); failed || err != nil {
			t.Fatalf("Pass = %v, %v; a deferral or a hold is no failure", failed, err)
		}
	}
	if strings.Join(calls, ",") != d1.ID+","+h.ID+","+d1.ID+","+d1.ID {
		t.Fatalf("sends %v; want d1 (c1 then blocked), h once, then d1 again", calls)
	}
	if !d.until.Equal(until) {
		t.Fatalf("the next pass at %v; want %v", d.until, until)
	}
	rows, _ := s.Rows("")
	for _, o := range rows {
		switch o.ID {
		case d1.ID, d2.ID:
			if o.State != Pending || o.Attempts != 0 {
				t.Fatalf("a deferred row %+v; want pending without attempts", o)
			}
		case h.ID:
			if o.State != Held {
				t.Fatalf("a held row %+v", o)
			}
		}
	}
}
