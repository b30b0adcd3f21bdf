// Command scv-tui will be SCV's terminal UI. For now it only says so: `scv`
// with no arguments runs it, and a clear message beats a missing binary.
package main

import (
	"os"

	"github.com/scv-cli/scv/scv-tui/internal/cmd"
)

func main() {
	os.Exit(int(cmd.Main()))
}
