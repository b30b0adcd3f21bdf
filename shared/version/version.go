// Package version holds the version of the SCV binaries, set at build time
// with -ldflags "-X github.com/scv-cli/scv/shared/version.Version=...".
package version

// Version is the release version of every SCV binary.
var Version = "0.1.0-dev"

// UserAgent is the User-Agent SCV sends on HTTP requests.
func UserAgent() string { return "scv/" + Version }
