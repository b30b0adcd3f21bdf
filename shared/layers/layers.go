// Package layers is the layer table of the shared module: which layer
// each package of shared belongs to. A package may import packages of its
// own layer or of layers below it, never above; test-only packages stand
// aside (anything may use them in tests, no program links them). The
// package's test enforces the table against `go list` and keeps the table
// in docs/architecture.md ("Layers of shared") the same as this one.
//
// Adding a package to shared means adding it to Table (and to the
// document): the test fails for a package that is in no layer.
package layers

// Module is the shared module's path; the table names packages relative
// to it.
const Module = "github.com/scv-cli/scv/shared"

// Layer is one layer of shared, bottom first in Table.
type Layer struct {
	// Name names the layer in the document.
	Name string
	// Packages are the layer's packages, relative to Module. A name
	// ending in "/..." stands for that directory's packages and every
	// package below it.
	Packages []string
}

// Table is the layers of shared, the bottom one first.
var Table = []Layer{
	// The wire format every client and the server speak (its types,
	// codec and generated JSON Schema), the version every binary
	// reports, and the text cutter, which imports nothing of shared.
	{Name: "protocol", Packages: []string{"protocol", "protocol/schema", "version", "textcut"}},
	// Where SCV keeps its files and how it writes and opens them: SCV_HOME
	// paths, atomic state files, state files opened without trusting
	// them, tagged processes (the bash tool's process groups and
	// delegated runs both use them), and the allow-listed environment of
	// the programs SCV starts for the user (childenv).
	{Name: "local state", Packages: []string{"paths", "atomicfile", "statefile", "proctag", "childenv", "daemonfile", "chatlog"}},
	// The table of delegated agent CLIs: data and pure functions over
	// paths (command lines, private environments, the model and effort
	// checks). The configuration validates [agents.<name>] against it,
	// so it sits below config.
	{Name: "delegation table", Packages: []string{"delegate/adapters"}},
	// config.toml: loading, validation, defaults.
	{Name: "configuration", Packages: []string{"config"}},
	// What delegation keeps on disk and several binaries read: sign-in
	// files (which read the configuration) and delegation records.
	{Name: "delegation state", Packages: []string{"delegate/signin", "delegate/records"}},
	// What the programs are built from: the one client connection (find,
	// start and stop a server; frames over a byte stream), the CLI kit
	// (exit codes, usage errors, the one error-to-exit-code function), the
	// command line of a binary whose feature has not landed.
	{Name: "clients and programs", Packages: []string{"cli", "client"}},
}

// TestOnly are the packages only tests use: the scripted fake model
// server, the test kit and this table. Any test may import them; no
// program links them, and no package of Table imports them.
var TestOnly = []string{"fakeopenai", "testkit/...", "layers"}
