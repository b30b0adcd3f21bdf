//go:build !unix

package sessionstore

import "os"

// lockFile does nothing where flock does not exist: keep one server per
// session there.
func lockFile(*os.File) error { return nil }

// syncDir does nothing where a directory cannot be synced.
func syncDir(string) error { return nil }
