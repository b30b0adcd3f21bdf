package chatlog

import (
	"fmt"
	"strings"
	"time"
)

// Episode ID layouts.
const (
	startLayout = "2006-01-02T15-04-05"
	dayLayout   = "2006-01-02"
	// maxIDLen is the length of every episode ID.
	maxIDLen = len("2026/2026-09-21_2026-09-27/2026-09-26T14-04-05")
)

// Ext is the file name extension of an episode file.
const Ext = ".jsonl"

// EpisodeID names an episode by the local wall-clock time of its start, to
// the second. Start's location is UTC only to carry the wall clock: the ID
// holds no offset.
type EpisodeID struct {
	Start time.Time
}

// NewEpisodeID returns the ID of an episode starting at t, read on t's own
// wall clock (pass t in the local zone).
func NewEpisodeID(t time.Time) EpisodeID {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return EpisodeID{Start: time.Date(y, mo, d, h, mi, s, 0, time.UTC)}
}

// String returns the ID as <year>/<week>/<start>: the ISO week-year, the
// ISO week as <Monday>_<Sunday>, and the start. 2026-12-31 falls in
// 2026-W53 (2026/2026-12-28_2027-01-03/…), and 2027-01-04 starts 2027-W01.
func (e EpisodeID) String() string {
	year, _ := e.Start.ISOWeek()
	mon, sun := isoWeek(e.Start)
	return fmt.Sprintf("%04d/%s_%s/%s", year, mon.Format(dayLayout), sun.Format(dayLayout), e.Start.Format(startLayout))
}

// Path returns the episode file's path relative to the log directory.
func (e EpisodeID) Path() string { return e.String() + Ext }

// Day is the start's date, YYYY-MM-DD, as before/after filters compare it.
func (e EpisodeID) Day() string { return e.Start.Format(dayLayout) }

// isoWeek returns the Monday and Sunday of t's ISO week.
func isoWeek(t time.Time) (time.Time, time.Time) {
	back := (int(t.Weekday()) + 6) % 7 // days since Monday
	y, m, d := t.Date()
	mon := time.Date(y, m, d-back, 0, 0, 0, 0, time.UTC)
	return mon, mon.AddDate(0, 0, 6)
}

// ParseEpisodeID parses an episode ID as String writes it. Any other shape
// is refused, including a week or year folder that does not match the
// start, so an ID can never name a path outside the log.
func ParseEpisodeID(s string) (EpisodeID, error) {
	bad := func() (EpisodeID, error) {
		return EpisodeID{}, fmt.Errorf("%q is not an episode ID; use one as chat_history lists it, such as 2026/2026-09-21_2026-09-27/2026-09-26T14-04-05", clip(s))
	}
	if len(s) != maxIDLen || strings.Count(s, "/") != 2 {
		return bad()
	}
	start := s[strings.LastIndexByte(s, '/')+1:]
	t, err := time.Parse(startLayout, start)
	if err != nil {
		return bad()
	}
	id := EpisodeID{Start: t}
	if id.String() != s {
		return bad()
	}
	return id, nil
}

// ParseDay parses a YYYY-MM-DD date of a before/after filter.
func ParseDay(s string) (string, error) {
	if _, err := time.Parse(dayLayout, s); err != nil || len(s) != len(dayLayout) {
		return "", fmt.Errorf("%q is not a date; use YYYY-MM-DD, such as 2026-09-01", clip(s))
	}
	return s, nil
}

// clip shortens what a refusal quotes.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
