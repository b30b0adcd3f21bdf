// Command scv-agents will supervise the agent CLIs SCV delegates to. For now
// it only says that it is not built yet.
package main

import (
	"os"

	"github.com/scv-cli/scv/scv-agents/internal/cmd"
)

func main() {
	os.Exit(int(cmd.Main()))
}
