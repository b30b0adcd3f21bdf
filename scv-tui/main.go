// Command scv-tui is SCV's interactive terminal UI: it runs scv-server
// --stdio as a child process and talks to it with the SCV protocol. `scv`
// with no arguments runs it.
package main

import (
	"os"

	"github.com/scv-cli/scv/scv-tui/internal/cmd"
)

func main() { os.Exit(cmd.Main()) }
