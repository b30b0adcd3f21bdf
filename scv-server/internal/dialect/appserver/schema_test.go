package appserver

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// committed is where the generated schema is committed.
const committed = "../../../../docs/app-server-schema"

// TestSchemaDrift fails when the committed JSON Schema or TypeScript
// differ from what the Go types generate. To update them:
//
//	scv-server app-server schema --out docs/app-server-schema
//	scv-server app-server generate-ts --out docs/app-server-schema/typescript
func TestSchemaDrift(t *testing.T) {
	t.Parallel()
	files, err := GenerateJSON()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(committed, SchemaDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := files[e.Name()]; !ok {
			t.Errorf("%s is committed but no longer generated; remove it", e.Name())
		}
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s/%s differs from the Go types (%v); regenerate it with scv-server app-server schema --out docs/app-server-schema", dir, name, err)
		}
	}
	ts, err := GenerateTS()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(committed, "typescript", ClientRequestTS))
	if err != nil || string(got) != string(ts)+"\n" {
		t.Errorf("the committed TypeScript differs from the Go types (%v); regenerate it with scv-server app-server generate-ts --out docs/app-server-schema/typescript", err)
	}
}

// TestMethodsHaveSchemas keeps the dispatch table and the schema's method
// table equal.
func TestMethodsHaveSchemas(t *testing.T) {
	t.Parallel()
	got := ClientMethods()
	slices.Sort(got)
	want := sortedKeys(clientRequests)
	if !slices.Equal(got, want) {
		t.Fatalf("dispatched methods %v, schema methods %v", got, want)
	}
}
