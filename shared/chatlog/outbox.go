package chatlog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/scv-cli/scv/shared/paths"
)

// Where chat media lives in SCV_HOME: what chat users send, by
// conversation, and the outbox of files SCV sends (docs/channels.md).
const (
	MediaDirName  = "media"
	OutboxDirName = "outbox"
)

// MediaRoot returns $SCV_HOME/state/media.
func MediaRoot(home string) string { return filepath.Join(paths.StateDir(home), MediaDirName) }

// MediaDir returns a conversation's media directory,
// $SCV_HOME/state/media/<channel>/<account>/<conversation>; each part must
// be a safe segment (CheckSegment).
func MediaDir(home, channel, account, conversation string) (string, error) {
	return Dir(MediaRoot(home), channel, account, conversation)
}

// OutboxDir returns the channels' media outbox, $SCV_HOME/state/media/outbox.
func OutboxDir(home string) string { return filepath.Join(MediaRoot(home), OutboxDirName) }

// OutboxRecord is the durable delivery record chat_attach writes beside
// each copy in the outbox, <outbox>/<id>.json, once the copy is complete;
// the chat bridge sends the file from it (docs/channels.md, "The outbox
// contract").
type OutboxRecord struct {
	// ID names the entry: <outbox>/<ID>/<Name> is the copy.
	ID           string `json:"id"`
	Platform     string `json:"platform"`
	Account      string `json:"account,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	SessionID    string `json:"session_id"`
	// TurnID is the turn whose reply carries the file.
	TurnID string `json:"turn_id,omitempty"`
	// Name is the file's name as shown to the user; Path the copy; Source
	// the original, links resolved.
	Name   string `json:"name"`
	Path   string `json:"path"`
	Source string `json:"source"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Kind is how the chat shows it: "image", "video" or "file".
	Kind    string    `json:"kind"`
	Caption string    `json:"caption,omitempty"`
	Created time.Time `json:"created"`
}

// SweepMedia removes the files chat users sent that are older than
// keepDays days at now: the entries of each conversation's media
// directory, $SCV_HOME/state/media/<channel>/<account>/<conversation>/,
// whose modification time is before now minus keepDays. Kept files have
// moved out of the media (chat_keep), and the outbox is left alone.
// Symbolic links are removed as entries, never followed; folders below a
// conversation's are not entered. It returns how many files it removed;
// an entry it cannot remove is reported in the error and the sweep goes
// on.
func SweepMedia(home string, keepDays int, now time.Time) (int, error) {
	cutoff := now.Add(-time.Duration(keepDays) * 24 * time.Hour)
	root := MediaRoot(home)
	var removed int
	var errs []error
	for _, ch := range subdirs(root) {
		if ch == OutboxDirName {
			continue
		}
		for _, acct := range subdirs(filepath.Join(root, ch)) {
			for _, conv := range subdirs(filepath.Join(root, ch, acct)) {
				dir := filepath.Join(root, ch, acct, conv)
				ents, err := os.ReadDir(dir)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				for _, e := range ents {
					if e.IsDir() {
						continue
					}
					fi, err := e.Info()
					if err != nil || !fi.ModTime().Before(cutoff) {
						continue
					}
					if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
						errs = append(errs, err)
						continue
					}
					removed++
				}
			}
		}
	}
	return removed, errors.Join(errs...)
}

// subdirs lists the real directories in dir (none when it is missing).
func subdirs(dir string) []string {
	names, _ := readDirs(dir)
	return names
}
