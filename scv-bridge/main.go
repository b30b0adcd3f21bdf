// Command scv-bridge will relay chat conversations to SCV sessions. For now it
// only says that it is not built yet.
package main

import (
	"os"

	"github.com/scv-cli/scv/scv-bridge/internal/cmd"
)

func main() {
	os.Exit(int(cmd.Main()))
}
