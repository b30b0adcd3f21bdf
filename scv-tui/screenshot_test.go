package main_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/scv-cli/scv/shared/fakeopenai"

	"github.com/scv-cli/scv/scv-tui/internal/ui/shot"
)

// writeScreenshots makes TestScreenshots write docs/tui-120x40.png and
// docs/tui-60x20.png: go test -run TestScreenshots -screenshots .
var writeScreenshots = flag.Bool("screenshots", false, "write the TUI screenshots into docs/")

const (
	fontRegular = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
	fontBold    = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
)

// TestScreenshots drives the real scv in tmux through a reply, a tool call
// waiting for approval (at 120x40) and the /model picker (at 60x20), and
// renders each captured screen, colours included, to a PNG.
func TestScreenshots(t *testing.T) {
	fonts, out := screenshotSetup(t, filepath.Join("..", "docs"))
	bin := binaries(t)
	srv := fakeopenai.Start(t)
	srv.SetModels("fake-model", "fake-large", "fake-mini")
	srv.Enqueue(
		fakeopenai.Script(fakeopenai.Text("A small Go module:\n\n- `go.mod`: module **example.com/demo**, Go 1.26\n- `main.go`: the entry point, which prints a greeting\n\nBuild with `go build ./...` and test with `go test ./...`.")),
		fakeopenai.Script(
			fakeopenai.Text("I will add a `hello` function in its own file:"),
			fakeopenai.ToolCall("w1", "write", `{"path":"hello.go","mode":"create","content":"package main\n\nimport \"fmt\"\n\n// hello greets name.\nfunc hello(name string) {\n\tfmt.Printf(\"hello, %s\\n\", name)\n}\n"}`),
		),
		fakeopenai.Script(fakeopenai.Text("Added `hello.go`. Call `hello(\"world\")` from `main`.")),
	)
	home, ws := fakeHome(t, srv), filepath.Join(t.TempDir(), "demo")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"go.mod": "module example.com/demo\n\ngo 1.26\n", "main.go": "package main\n\nfunc main() {}\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tm := startTerm(t, ws, home, []string{"COLORTERM=truecolor"}, filepath.Join(bin, "scv"))
	tm.tmux("resize-window", "-t", "e2e", "-x", "120", "-y", "40")
	tm.waitText("fake-model", "Ask anything")
	tm.submit("what is in this project?")
	tm.waitText("test with go test")
	tm.waitIdle()
	tm.submit("add a hello function")
	tm.waitText("Allow write?", "+func hello(name string) {")
	capture(t, tm, fonts, 120, 40, filepath.Join(out, "tui-120x40.png"))
	tm.keys("y")
	tm.waitText("Added", "from")
	tm.tmux("resize-window", "-t", "e2e", "-x", "60", "-y", "20")
	tm.submit("/model")
	tm.waitText("Switch the session's model", "fake-mini")
	capture(t, tm, fonts, 60, 20, filepath.Join(out, "tui-60x20.png"))
	tm.keys("Escape")
	tm.waitGone("Switch the session's model")
	tm.quit()
}

// screenshotSetup is what a screenshot test needs: tmux and the fonts
// (missing, the test is skipped, except under CI, where scripts/deps.sh
// installs them and their absence fails), and where the images go: docs,
// created if need be, with -screenshots, else a temporary directory (the
// rendering is exercised either way).
func screenshotSetup(t *testing.T, docs string) (*shot.Fonts, string) {
	t.Helper()
	needTmux(t)
	if _, err := os.Stat(fontRegular); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("DejaVu Sans Mono is not installed; CI must run scripts/deps.sh before the tests")
		}
		t.Skip("DejaVu Sans Mono is not installed (scripts/deps.sh installs fonts-dejavu-core)")
	}
	fonts, err := shot.LoadFonts(fontRegular, fontBold, 15)
	if err != nil {
		t.Fatal(err)
	}
	if !*writeScreenshots {
		return fonts, t.TempDir()
	}
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	return fonts, docs
}

// capture renders the pane, cols x rows, to the PNG file path.
func capture(t *testing.T, tm *term, fonts *shot.Fonts, cols, rows int, path string) {
	t.Helper()
	captureWith(t, tm, fonts, cols, rows, path, shot.Dark)
}

// captureWith is capture in a terminal of default colours d.
func captureWith(t *testing.T, tm *term, fonts *shot.Fonts, cols, rows int, path string, d shot.Defaults) {
	t.Helper()
	screen, err := exec.Command("tmux", "-L", tm.socket, "capture-pane", "-e", "-p", "-t", "e2e").Output()
	if err != nil {
		t.Fatalf("capture-pane: %v", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".shot-*.png")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	if err := shot.RenderWith(f, shot.ParseWith(string(screen), cols, rows, d), fonts, d); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		t.Fatal(err)
	}
}

// TestScreenshotGallery drives the real scv in tmux to each feature of
// issue 21 that changes the screen, in a pane of 120x40 and in one of
// 60x20 (a new scv for each, so every frame is drawn at its size), and
// renders them: the command menu, the @ file menu, a session rule in
// /rules with /cost at configured prices, /help (scrolling at 60x20) and
// the first-run offer. With -screenshots the images are written to
// docs/screenshots/NAME-COLSxROWS.png (docs/tui.md shows them).
func TestScreenshotGallery(t *testing.T) {
	fonts, out := screenshotSetup(t, filepath.Join("..", "docs", "screenshots"))
	bin := binaries(t)
	for _, size := range []struct{ cols, rows int }{{120, 40}, {60, 20}} {
		suffix := fmt.Sprintf("-%dx%d.png", size.cols, size.rows)
		shoot := func(tm *term, name string) {
			t.Helper()
			capture(t, tm, fonts, size.cols, size.rows, filepath.Join(out, name+suffix))
		}

		srv := fakeopenai.Start(t)
		srv.Enqueue(
			fakeopenai.Script(fakeopenai.ToolCall("b1", "bash", `{"command":"make test"}`), fakeopenai.Usage(12000, 300)),
			fakeopenai.Script(fakeopenai.Text("All tests pass."), fakeopenai.CachedUsage(12400, 40, 11800)),
		)
		home, ws := t.TempDir(), filepath.Join(t.TempDir(), "demo")
		cfg := srv.Config("") + "\n[providers.fake.models.\"fake-model\"]\ninput_price = 2.00\noutput_price = 8.00\ncached_input_price = 0.50\n\n[tools]\nallow = [\"bash:git status\"]\n"
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "Makefile"), []byte("test:\n\t@echo 'ok   example.com/demo/internal/server  0.012s'\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"go.mod", "main.go", "internal/server/server.go", "internal/server/server_test.go"} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, f)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, f), []byte("package x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		tm := startTermAt(t, size.cols, size.rows, ws, home, []string{"COLORTERM=truecolor"}, filepath.Join(bin, "scv"), "")
		tm.waitText("fake-model", "Ask anything")

		tm.typeText("/")
		tm.waitText("▸ /clear", "/compact")
		shoot(tm, "commands")
		tm.keys("C-u")
		tm.waitGone("▸ /clear")

		tm.typeText("look at @srv")
		tm.waitText("internal/server/server.go", "internal/server/server_test.go")
		shoot(tm, "mention")
		tm.keys("C-u")
		tm.waitGone("internal/server/server_test.go")

		tm.submit("run the tests")
		tm.waitText("Allow bash?")
		tm.keys("a")
		tm.waitText("All tests pass.")
		tm.waitIdle()
		tm.submit("/rules")
		tm.waitText("bash:make test")
		tm.submit("/cost")
		tm.waitText("Cost: $")
		shoot(tm, "rules-cost")

		tm.submit("/help")
		tm.waitText("Up/Down  prompt history")
		shoot(tm, "help")
		tm.keys("Escape")
		tm.waitGone("Up/Down  prompt history")
		tm.quit()

		first := startTermAt(t, size.cols, size.rows, t.TempDir(), t.TempDir(), []string{"COLORTERM=truecolor"}, filepath.Join(bin, "scv"), "")
		first.waitText("No model provider is configured yet")
		shoot(first, "first-run")
		first.typeText("d")
		first.keys("Enter")
		first.waitText("scv-demo")
		first.quit()
	}
}
