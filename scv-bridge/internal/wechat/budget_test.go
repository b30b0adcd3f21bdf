package wechat

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestBudgetClasses(t *testing.T) {
	t.Parallel()
	b := NewBudget(0, 0)
	if n, _ := b.Grant("p", ClassProgress, 20); n != 6 {
		t.Errorf("progress granted %d of 8, want 6", n)
	}
	b.Spend("p", ClassProgress, 6)
	if n, _ := b.Grant("p", ClassReport, 1); n != 0 {
		t.Error("a report used the notice's or the answer's send")
	}
	if n, _ := b.Grant("p", ClassNotice, 1); n != 1 {
		t.Error("no room for the notice")
	}
	b.Spend("p", ClassNotice, 1)
	if n, _ := b.Grant("p", ClassNotice, 1); n != 0 {
		t.Error("a second notice")
	}
	if n, _ := b.Grant("p", ClassFinal, 3); n != 1 {
		t.Errorf("final granted %d, want the 1 kept", n)
	}
	if n, _ := b.Grant("other", ClassFinal, 3); n != 3 {
		t.Error("budgets are per conversation")
	}
	b.Inbound("p")
	if b.Remaining("p", ClassFinal) != 8 {
		t.Error("an inbound message renews the budget")
	}
	if NewBudget(1, 0).Limit() != 3 {
		t.Error("a budget below 3 leaves no room for the notice and the answer")
	}
}

func TestBudgetThrottleBacksOffAndPersists(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 9, 26, 6, 0, 0, 0, time.UTC)
	b := NewBudget(8, time.Minute) // raised to the 1 h minimum
	b.now = func() time.Time { return now }
	if until := b.Throttle(); until.Sub(now) != time.Hour {
		t.Errorf("first penalty %v", until.Sub(now))
	}
	if _, err := b.Grant("p", ClassFinal, 1); !errors.Is(err, ErrThrottled) {
		t.Errorf("grant while throttled: %v", err)
	}
	if until := b.Throttle(); until.Sub(now) != 2*time.Hour {
		t.Errorf("a repeated refusal doubles the wait: %v", until.Sub(now))
	}
	for range 10 {
		b.Throttle()
	}
	if d := b.ThrottledUntil().Sub(now); d != 24*time.Hour {
		t.Errorf("capped at a day: %v", d)
	}
	data, _ := json.Marshal(b.State())
	var st BudgetState
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	r := NewBudget(8, 0)
	r.now = func() time.Time { return now.Add(23 * time.Hour) }
	r.Restore(st)
	if _, err := r.Grant("p", ClassFinal, 1); !errors.Is(err, ErrThrottled) {
		t.Error("a restart forgot the penalty")
	}
	r.now = func() time.Time { return now.Add(25 * time.Hour) }
	if n, err := r.Grant("p", ClassFinal, 1); n != 1 || err != nil {
		t.Errorf("after the penalty: %d, %v", n, err)
	}
}
