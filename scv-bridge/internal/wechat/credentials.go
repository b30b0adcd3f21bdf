package wechat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/statefile"
)

// ErrNotBound is returned by ReadCredentials when the account has no
// credential file.
var ErrNotBound = errors.New("the WeChat account is not bound; run scv channels login wechat")

// WriteCredentials stores c at path atomically with mode 0600 (the folder
// 0700), so a crash leaves the old file or the new one, never half.
func WriteCredentials(path string, c Credentials) error {
	if c.Token == "" || c.OwnerID == "" {
		return fmt.Errorf("wechat: refusing to store credentials without a token or an owner: %w", errBadInput)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("wechat: creating the credentials folder: %w", err)
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("wechat: storing the credentials: %w", err)
	}
	return nil
}

// ReadCredentials reads the file WriteCredentials wrote, refusing a link
// or a file others can read.
func ReadCredentials(path string) (Credentials, error) {
	data, err := statefile.ReadFile(filepath.Dir(path), filepath.Base(path), 1<<16, statefile.NoLinks)
	if errors.Is(err, fs.ErrNotExist) {
		return Credentials{}, ErrNotBound
	}
	if err != nil {
		return Credentials{}, fmt.Errorf("wechat: reading the credentials: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return Credentials{}, fmt.Errorf("wechat: %s is readable by others (mode %o); run chmod 600 on it or bind again", path, fi.Mode().Perm())
	}
	var c Credentials
	if err := json.Unmarshal(data, &c); err != nil || c.Token == "" {
		return Credentials{}, fmt.Errorf("wechat: %s is not a credentials file; bind the account again", path)
	}
	return c, nil
}
