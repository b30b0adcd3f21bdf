package records

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"
)

// Names of the state directories and files of this package.
const (
	// DirName is the directory of the records in the state directory.
	DirName = "delegations"
	// ConversationsDirName is the directory of the conversation markers in
	// the state directory.
	ConversationsDirName = "conversations"
	// recordExt ends every record's file name.
	recordExt = ".json"
	// maxRecordBytes bounds what List reads of one record file.
	maxRecordBytes = 1 << 20
	// maxNameLen bounds a handle or CLI session id used as a file name.
	maxNameLen = 200
)

// Dir returns the directory of the records: home/state/delegations.
func Dir(home string) string { return filepath.Join(paths.StateDir(home), DirName) }

// ConversationsDir returns the directory of the conversation markers:
// home/state/conversations.
func ConversationsDir(home string) string {
	return filepath.Join(paths.StateDir(home), ConversationsDirName)
}

// CheckName reports whether s can name a record or marker file: 1 to 200
// ASCII letters, digits, '.', '_' or '-', not starting with '.' (so it is
// never hidden, "." or "..", nor taken for a temporary file).
func CheckName(kind, s string) error {
	if s == "" {
		return fmt.Errorf("%s is empty", kind)
	}
	if len(s) > maxNameLen {
		return fmt.Errorf("%s %.40q… is longer than %d bytes", kind, s, maxNameLen)
	}
	if s[0] == '.' {
		return fmt.Errorf("%s %q cannot be a file name: it starts with a dot", kind, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%s %q cannot be a file name: use only letters, digits, '.', '_' and '-'", kind, s)
		}
	}
	return nil
}

// Path returns the file of the record of handle.
func Path(home, handle string) (string, error) {
	if err := CheckName("delegation handle", handle); err != nil {
		return "", err
	}
	return filepath.Join(Dir(home), handle+recordExt), nil
}

// Write stores r as its handle's record, atomically with mode 0600,
// creating the directory (0700) when needed.
func Write(home string, r Record) error {
	p, err := Path(home, r.Handle)
	if err != nil {
		return fmt.Errorf("cannot write the delegation record: %w", err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode the delegation record of %s: %w", r.Handle, err)
	}
	if err := paths.EnsureDir(Dir(home)); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(p, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("cannot write the delegation record of %s: %w", r.Handle, err)
	}
	return nil
}

// Remove deletes handle's record; a missing record is not an error.
func Remove(home, handle string) error {
	p, err := Path(home, handle)
	if err != nil {
		return fmt.Errorf("cannot remove the delegation record: %w", err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove the delegation record of %s: %w", handle, err)
	}
	return nil
}

// Read returns handle's record. A missing record is an error wrapping
// fs.ErrNotExist; an unreadable one a *CorruptError.
func Read(home, handle string) (Record, error) {
	p, err := Path(home, handle)
	if err != nil {
		return Record{}, err
	}
	return readRecord(p, handle)
}

// CorruptError says a record file could not be read as a record. The file
// is left where it is: `scv agents kill <handle>` stops the processes
// tagged with its handle and removes it.
type CorruptError struct {
	// Path is the record file; Handle the handle its name gives.
	Path, Handle string
	Err          error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("delegation record %s is corrupt (%v); remove it with `scv agents kill %s`", e.Path, e.Err, e.Handle)
}

func (e *CorruptError) Unwrap() error { return e.Err }

func readRecord(p, handle string) (Record, error) {
	data, err := statefile.ReadFile(filepath.Dir(p), filepath.Base(p), maxRecordBytes, statefile.NoLinks)
	var nr *statefile.NotRegularError
	var big *statefile.TooLargeError
	switch {
	case errors.As(err, &nr):
		return Record{}, &CorruptError{Path: p, Handle: handle, Err: errors.New(nr.What())}
	case errors.As(err, &big):
		return Record{}, &CorruptError{Path: p, Handle: handle, Err: fmt.Errorf("larger than %d bytes", maxRecordBytes)}
	case errors.Is(err, fs.ErrNotExist):
		return Record{}, err
	case err != nil:
		return Record{}, fmt.Errorf("cannot read delegation record %s: %w", p, err)
	}
	r, err := ParseRecord(data)
	if err != nil {
		return Record{}, &CorruptError{Path: p, Handle: handle, Err: err}
	}
	if r.Handle != handle {
		return Record{}, &CorruptError{Path: p, Handle: handle, Err: fmt.Errorf("it names handle %q", r.Handle)}
	}
	return r, nil
}

// ParseRecord decodes a record file's content and checks that it names a
// handle usable as a file name and an owner process.
func ParseRecord(data []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, err
	}
	if err := CheckName("handle", r.Handle); err != nil {
		return Record{}, err
	}
	if r.Owner.PID <= 0 {
		return Record{}, fmt.Errorf("owner pid %d is not a process id", r.Owner.PID)
	}
	if r.AgentProcess.PID < 0 {
		return Record{}, fmt.Errorf("agent pid %d is not a process id", r.AgentProcess.PID)
	}
	return r, nil
}

// List returns every readable record, sorted by start time then handle.
// A missing directory is no records. Each file that cannot be read as a
// record is skipped and reported in err (errors.Join of *CorruptError and
// read errors), while the readable records are still returned; nothing is
// deleted.
func List(home string) ([]Record, error) {
	entries, err := os.ReadDir(Dir(home))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot list delegation records: %w", err)
	}
	var recs []Record
	var errs []error
	for _, e := range entries {
		name := e.Name()
		handle, ok := strings.CutSuffix(name, recordExt)
		if !ok || strings.HasPrefix(name, ".") {
			continue // atomicfile's temporaries and foreign files
		}
		p := filepath.Join(Dir(home), name)
		if CheckName("handle", handle) != nil {
			errs = append(errs, &CorruptError{Path: p, Handle: handle, Err: errors.New("its name is not a handle")})
			continue
		}
		r, err := readRecord(p, handle)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since the listing
			}
			errs = append(errs, err)
			continue
		}
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b Record) int {
		if a.StartedUnix != b.StartedUnix {
			return int(a.StartedUnix - b.StartedUnix)
		}
		return strings.Compare(a.Handle, b.Handle)
	})
	return recs, errors.Join(errs...)
}
