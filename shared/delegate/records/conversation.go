package records

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"
)

// Marker is a live conversation's marker: the CLI's own session id (the
// file's name) and the SCV process whose conversation it is. `scv agents
// gc` keeps the transcripts a marker with a live owner names.
type Marker struct {
	CLISession string  `json:"cli_session"`
	Owner      Process `json:"owner"`
}

// MarkConversation records that owner holds the conversation whose CLI
// session id is cliSession, atomically with mode 0600.
func MarkConversation(home, cliSession string, owner Process) error {
	if err := CheckName("CLI session id", cliSession); err != nil {
		return fmt.Errorf("cannot mark the conversation: %w", err)
	}
	data, err := json.Marshal(Marker{CLISession: cliSession, Owner: owner})
	if err != nil {
		return err
	}
	if err := paths.EnsureDir(ConversationsDir(home)); err != nil {
		return err
	}
	p := filepath.Join(ConversationsDir(home), cliSession)
	if err := atomicfile.WriteFile(p, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("cannot mark conversation %s: %w", cliSession, err)
	}
	return nil
}

// UnmarkConversation removes cliSession's marker; a missing one is not an
// error.
func UnmarkConversation(home, cliSession string) error {
	if err := CheckName("CLI session id", cliSession); err != nil {
		return fmt.Errorf("cannot unmark the conversation: %w", err)
	}
	err := os.Remove(filepath.Join(ConversationsDir(home), cliSession))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove the marker of conversation %s: %w", cliSession, err)
	}
	return nil
}

// Markers returns every readable marker. Unreadable ones are reported in
// err (errors.Join) and skipped.
func Markers(home string) ([]Marker, error) {
	entries, err := os.ReadDir(ConversationsDir(home))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot list conversation markers: %w", err)
	}
	var out []Marker
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(ConversationsDir(home), name)
		data, err := statefile.ReadFile(ConversationsDir(home), name, maxRecordBytes, statefile.NoLinks)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("cannot read conversation marker %s: %w", p, err))
			}
			continue
		}
		var m Marker
		if err := json.Unmarshal(data, &m); err != nil || m.CLISession != name {
			errs = append(errs, fmt.Errorf("conversation marker %s is corrupt; delete it if no SCV process uses that conversation", p))
			continue
		}
		out = append(out, m)
	}
	return out, errors.Join(errs...)
}

// LiveConversations returns the CLI session ids whose markers name a
// live owner. Markers that cannot be read are reported in err and, to be
// safe, their names are included too.
func LiveConversations(home string) (map[string]bool, error) {
	ms, err := Markers(home)
	live := map[string]bool{}
	for _, m := range ms {
		if m.Owner.Alive() {
			live[m.CLISession] = true
		}
	}
	if err != nil {
		// A marker that cannot be read may still name a live transcript.
		entries, _ := os.ReadDir(ConversationsDir(home))
		seen := map[string]bool{}
		for _, m := range ms {
			seen[m.CLISession] = true
		}
		for _, e := range entries {
			if n := e.Name(); !seen[n] && !strings.HasPrefix(n, ".") {
				live[n] = true
			}
		}
	}
	return live, err
}
