// Command scv-agents manages SCV's delegated agents: the running
// delegations (ps, kill), their transcripts (gc), and their sign-ins in
// private homes (status, login, logout, import). `scv agents …` runs it.
package main

import (
	"os"

	"github.com/scv-cli/scv/scv-agents/internal/cmd"
)

func main() { os.Exit(cmd.Main()) }
