// Command scv-bridge relays chat conversations to SCV sessions (docs/channels.md).
package main

import (
	"os"

	"github.com/scv-cli/scv/scv-bridge/internal/cmd"
)

func main() {
	os.Exit(int(cmd.Main()))
}
