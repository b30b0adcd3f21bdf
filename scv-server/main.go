// Command scv-server is SCV's agent runtime: `scv-server --stdio` serves the
// SCV protocol on standard input and output.
package main

import (
	"os"

	"github.com/scv-cli/scv/scv-server/internal/cmd"
)

func main() { os.Exit(cmd.Main()) }
