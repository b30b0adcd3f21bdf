// Command scv is the user-facing SCV command: the terminal UI, headless
// turns (scv exec) and the server (scv server). See internal/cmd.
package main

import (
	"os"

	"github.com/scv-cli/scv/scv/internal/cmd"
)

func main() {
	os.Exit(int(cmd.Main()))
}
