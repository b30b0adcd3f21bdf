package layers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// goPackage is what `go list -json` says of a package.
type goPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

// goList runs `go list -json` with args in dir and decodes its packages.
func goList(t *testing.T, dir string, args ...string) []goPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports,Error"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list's output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// testOnly is the layer number of the test-only packages.
const testOnly = -1

// layerOf returns the layer of the shared package rel (relative to
// Module): its index in Table, or testOnly.
func layerOf(rel string) (int, bool) {
	if slices.ContainsFunc(TestOnly, func(p string) bool { return matches(p, rel) }) {
		return testOnly, true
	}
	for i, l := range Table {
		if slices.ContainsFunc(l.Packages, func(p string) bool { return matches(p, rel) }) {
			return i, true
		}
	}
	return 0, false
}

// matches reports whether a table entry names the package rel.
func matches(entry, rel string) bool {
	if dir, ok := strings.CutSuffix(entry, "/..."); ok {
		return rel == dir || strings.HasPrefix(rel, dir+"/")
	}
	return entry == rel
}

// relative returns the import path relative to Module, or false for a
// package outside shared.
func relative(path string) (string, bool) {
	return strings.CutPrefix(path, Module+"/")
}

func layerName(n int) string {
	if n == testOnly {
		return "test-only"
	}
	return fmt.Sprintf("%d, %s", n, Table[n].Name)
}

// sharedPackages lists the packages of the shared module.
func sharedPackages(t *testing.T) []goPackage {
	t.Helper()
	return goList(t, "..", "./...")
}

// TestImportsGoDown fails when a package of shared imports a package of
// a layer above its own, when a program's package imports a test-only
// one, or when a package is in no layer.
func TestImportsGoDown(t *testing.T) {
	t.Parallel()
	for _, p := range sharedPackages(t) {
		rel, _ := relative(p.ImportPath)
		own, ok := layerOf(rel)
		if !ok {
			t.Errorf("%s is in no layer of shared: add it to layers.Table (shared/layers/layers.go) and to the table in docs/architecture.md", rel)
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := relative(imp)
			if !ok {
				continue
			}
			layer, known := layerOf(dep)
			switch {
			case !known:
				// Reported as the package itself is listed.
			case layer == testOnly && own != testOnly:
				t.Errorf("%s (layer %s) imports the test-only package %s: only tests may use it", rel, layerName(own), dep)
			case own != testOnly && layer > own:
				t.Errorf("%s (layer %s) imports %s (layer %s), a layer above it: move the code it needs down, or pass it in from above", rel, layerName(own), dep, layerName(layer))
			}
		}
	}
}

// TestTableNamesRealPackages fails for a table entry that names no
// package, so the table and the document cannot keep a package that went.
func TestTableNamesRealPackages(t *testing.T) {
	t.Parallel()
	var rels []string
	for _, p := range sharedPackages(t) {
		rel, _ := relative(p.ImportPath)
		rels = append(rels, rel)
	}
	var entries []string
	for _, l := range Table {
		entries = append(entries, l.Packages...)
	}
	for _, e := range append(entries, TestOnly...) {
		if !slices.ContainsFunc(rels, func(rel string) bool { return matches(e, rel) }) {
			t.Errorf("layers.Table names %s, which is not a package of shared; remove it from the table and from docs/architecture.md", e)
		}
	}
	seen := map[string]bool{}
	for _, e := range append(entries, TestOnly...) {
		if seen[e] {
			t.Errorf("layers.Table names %s twice; a package has one layer", e)
		}
		seen[e] = true
	}
}

// programs are the binaries of the workspace.
var programs = []string{
	"github.com/scv-cli/scv/scv",
	"github.com/scv-cli/scv/scv-server",
	"github.com/scv-cli/scv/scv-tui",
	"github.com/scv-cli/scv/scv-agents",
	"github.com/scv-cli/scv/scv-bridge",
}

// TestProgramsLinkNoTestOnlyPackage fails when a binary of the workspace
// depends on a test-only package of shared.
func TestProgramsLinkNoTestOnlyPackage(t *testing.T) {
	t.Parallel()
	if gowork(t) == "" {
		t.Skip("the programs are other modules of the workspace; with GOWORK=off only shared is visible")
	}
	for _, prog := range programs {
		for _, p := range goList(t, "..", "-deps", prog) {
			rel, ok := relative(p.ImportPath)
			if !ok {
				continue
			}
			if layer, _ := layerOf(rel); layer == testOnly {
				t.Errorf("%s links the test-only package %s; only tests may use it", prog, rel)
			}
		}
	}
}

// heavy are module paths the named binaries must not link (issue 23):
// a binary's resident memory is mostly the pages of its own code and
// tables that start-up and a turn touch, so a package a binary does not
// need still costs it memory and start-up time (its init).
var heavy = map[string][]string{
	// openai-go was half of scv-server's binary (31 → 15 MB) and 6 MiB of
	// its peak: the Responses wire writes its own request types.
	"github.com/scv-cli/scv/scv-server": {"github.com/openai/openai-go"},
	// scv exec is a thin client: it starts the server or scv-tui, and
	// links none of their libraries.
	"github.com/scv-cli/scv/scv": {
		"github.com/openai/openai-go", "github.com/sashabaranov/go-openai",
		"github.com/charmbracelet", "github.com/PuerkitoBio/goquery",
		"github.com/JohannesKaufmann/html-to-markdown", "go.etcd.io/bbolt",
		"github.com/modelcontextprotocol/go-sdk", "golang.org/x/text/encoding",
		"github.com/scv-cli/scv/scv-server", "github.com/scv-cli/scv/scv-tui",
	},
}

// TestProgramsLinkNoHeavyPackage fails when a binary links a module it
// must not (heavy).
func TestProgramsLinkNoHeavyPackage(t *testing.T) {
	t.Parallel()
	if gowork(t) == "" {
		t.Skip("the programs are other modules of the workspace; with GOWORK=off only shared is visible")
	}
	for prog, banned := range heavy {
		linked := map[string]string{} // a banned path → one package of it
		for _, p := range goList(t, "..", "-deps", prog) {
			for _, b := range banned {
				if p.ImportPath == b || strings.HasPrefix(p.ImportPath, b+"/") {
					linked[b] = p.ImportPath
				}
			}
		}
		for b, p := range linked {
			t.Errorf("%s links %s (%s), which it must not: see docs/performance.md, Memory", prog, b, p)
		}
	}
}

func gowork(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil {
		t.Fatalf("go env GOWORK: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// document is the architecture document, whose "Layers of shared" table
// must list the layers of Table.
var document = filepath.Join("..", "..", "docs", "architecture.md")

// docRow is a row of the document's layer table: | n | name | `pkg`, … | why |.
var docRow = regexp.MustCompile(`^\|\s*(\d+|aside)\s*\|\s*([^|]+?)\s*\|([^|]*)\|`)

// quoted is a `code` span of a row's packages cell.
var quoted = regexp.MustCompile("`([^`]+)`")

// TestDocumentMatchesTable fails when the layer table of
// docs/architecture.md differs from Table.
func TestDocumentMatchesTable(t *testing.T) {
	t.Parallel()
	f, err := os.Open(document)
	if err != nil {
		t.Fatalf("the layers are documented in docs/architecture.md: %v", err)
	}
	defer f.Close()
	want := map[string][]string{}
	for i, l := range Table {
		want[fmt.Sprintf("%d %s", i, l.Name)] = slices.Sorted(slices.Values(l.Packages))
	}
	want["aside test-only"] = slices.Sorted(slices.Values(TestOnly))
	got := map[string][]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "<!-- layers:begin -->"):
			in = true
		case strings.Contains(line, "<!-- layers:end -->"):
			in = false
		case in:
			m := docRow.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			var pkgs []string
			for _, q := range quoted.FindAllStringSubmatch(m[3], -1) {
				pkgs = append(pkgs, q[1])
			}
			got[m[1]+" "+m[2]] = slices.Sorted(slices.Values(pkgs))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatalf("docs/architecture.md has no layer table between <!-- layers:begin --> and <!-- layers:end -->")
	}
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("docs/architecture.md's layer table has no row %q (packages %s)", k, strings.Join(w, ", "))
		} else if !slices.Equal(g, w) {
			t.Errorf("docs/architecture.md's layer row %q lists %s; layers.Table has %s", k, strings.Join(g, ", "), strings.Join(w, ", "))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("docs/architecture.md's layer table has row %q, which layers.Table does not", k)
		}
	}
}
