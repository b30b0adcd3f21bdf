package chat

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/scv-server/internal/tools/toolstest"
	"github.com/scv-cli/scv/shared/protocol"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a session's world: SCV_HOME, the user's home, a workspace,
// and the chat tools of a Feishu owner's direct chat.
type fixture struct {
	home, user, archive, media string
	env                        tools.Env
	set                        *Set
}

func newFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	base := t.TempDir()
	if r, err := filepath.EvalSymlinks(base); err == nil {
		base = r
	}
	f := &fixture{home: filepath.Join(base, "scvhome"), user: filepath.Join(base, "user")}
	f.archive = filepath.Join(f.home, "archive")
	for _, d := range []string{f.home, f.user} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	f.env = toolstest.Env(t, files)
	f.set = f.newSet(t, protocol.Channel{Platform: "feishu", Account: "default", Conversation: "oc_1", Log: true})
	f.media = f.set.media
	return f
}

func (f *fixture) newSet(t *testing.T, ch protocol.Channel) *Set {
	t.Helper()
	s, err := New(Options{Home: f.home, UserHome: f.user, Archive: f.archive, Channel: ch, SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// write creates the file p (absolute) with content, and its directories.
func write(t *testing.T, p, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// call prepares and runs a call of tool; a refusal is returned as err.
func call(t *testing.T, tool tools.Tool, env tools.Env, args map[string]any) (tools.Result, *tools.Plan, error) {
	t.Helper()
	plan, err := tool.Prepare(env, toolstest.Args(t, args))
	if err != nil {
		return tools.Result{}, nil, err
	}
	res, err := plan.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res, plan, nil
}

func TestToolsOffered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	names := func(s *Set) string {
		var out []string
		for _, tl := range s.Tools() {
			out = append(out, tl.Spec().Name)
		}
		return strings.Join(out, ",")
	}
	if got := names(f.set); got != "chat_attach,chat_history,chat_keep" {
		t.Errorf("owner's direct chat: %s", got)
	}
	if got := names(f.newSet(t, protocol.Channel{Platform: "feishu", Account: "default", Conversation: "oc_2"})); got != "chat_attach" {
		t.Errorf("a channel without its log: %s", got)
	}
	if !strings.Contains(f.set.SystemSection(), "chat_history") || strings.Contains(f.newSet(t, protocol.Channel{Platform: "wechat"}).SystemSection(), "chat_history") {
		t.Error("the Chat channel section names chat_history exactly when the session has it")
	}
	reg := tools.NewRegistry()
	for _, tl := range f.set.Tools() {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := New(Options{Home: f.home, Archive: "relative", Channel: protocol.Channel{Platform: "feishu", Account: "a", Conversation: "b", Log: true}}); err == nil {
		t.Error("a relative archive was accepted")
	}
}

func TestAttachCopiesIntoOutbox(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"out/chart.png": "PNGDATA"})
	f.env.TurnID = "t1"
	res, plan, err := call(t, f.set.attach, f.env, map[string]any{"path": "out/chart.png", "caption": "Sales by month"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || plan.Risk != protocol.RiskNetwork {
		t.Fatalf("result %+v, risk %s", res, plan.Risk)
	}
	ents, _ := filepath.Glob(filepath.Join(OutboxDir(f.home), "*.json"))
	if len(ents) != 1 {
		t.Fatalf("outbox records: %v", ents)
	}
	data, _ := os.ReadFile(ents[0])
	var rec OutboxRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Name != "chart.png" || rec.Kind != "image" || rec.Size != 7 || rec.Caption != "Sales by month" || rec.Platform != "feishu" ||
		rec.Conversation != "oc_1" || rec.TurnID != "t1" || rec.SessionID != "s1" || filepath.Dir(filepath.Dir(rec.Path)) != OutboxDir(f.home) {
		t.Errorf("record %+v", rec)
	}
	if !strings.Contains(res.Output, rec.Path) {
		t.Errorf("the result does not report the copy: %s", res.Output)
	}
	copied, err := os.ReadFile(rec.Path)
	if err != nil || string(copied) != "PNGDATA" {
		t.Fatalf("copy %q, %v", copied, err)
	}
	for _, p := range []string{rec.Path, ents[0]} {
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", p, fi.Mode())
		}
	}
	if fi, _ := os.Stat(OutboxDir(f.home)); fi.Mode().Perm() != 0o700 {
		t.Errorf("outbox mode %v", fi.Mode())
	}
}

func TestAttachRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"empty.txt": "", "dir/": "", "ok.txt": "fine", "big.bin": ""})
	if err := os.Truncate(filepath.Join(f.env.Workspace, "big.bin"), MaxAttachBytes+1); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(f.env.Workspace, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := f.env.Workspace
	secret := write(t, filepath.Join(f.user, ".ssh", "notes.txt"), "secret")
	_ = os.Symlink(secret, filepath.Join(ws, "innocent.txt"))
	_ = os.Symlink(filepath.Join(f.user, ".aws"), filepath.Join(ws, "cloud"))
	write(t, filepath.Join(f.user, ".aws", "config"), "x")
	cases := map[string]string{
		"missing.txt":  "does not exist",
		"empty.txt":    "is empty",
		"dir":          "not a regular file",
		"pipe":         "not a regular file",
		"big.bin":      "over the 25 MiB",
		"innocent.txt": "credential location (~/.ssh)",
		"cloud/config": "credential location (~/.aws)",
		// SCV_HOME, except media and this chat's kept files.
		write(t, filepath.Join(f.home, "config.toml"), "x"):                                          "instance directory",
		write(t, filepath.Join(f.home, "state", "sessions", "s1", "log.jsonl"), "x"):                 "instance directory",
		write(t, filepath.Join(OutboxDir(f.home), "x", "a.txt"), "x"):                                "instance directory",
		write(t, filepath.Join(f.archive, "feishu", "default", "oc_2", "files", "a.txt"), "x"):       "instance directory",
		write(t, filepath.Join(f.archive, "feishu", "default", "oc_1", "2026", "w", "e.jsonl"), "x"): "instance directory",
		// Host secrets (refused as named, whether or not they exist here).
		"/etc/shadow": "host secret", "/etc/gshadow": "host secret", "/etc/ssh/sshd_config": "host secret",
		"/etc/sudoers": "host secret", "/root/.bashrc": "host secret", "/proc/self/environ": "host secret",
		"/sys/kernel/notes": "host secret", "/dev/zero": "host secret",
		// Secret-like names anywhere.
		write(t, filepath.Join(ws, ".env"), "K=v"):                    "looks like a secret",
		write(t, filepath.Join(ws, ".env.local"), "K=v"):              "looks like a secret",
		write(t, filepath.Join(ws, "my_credentials.txt"), "x"):        "looks like a secret",
		write(t, filepath.Join(ws, "private_key.txt"), "x"):           "looks like a secret",
		write(t, filepath.Join(ws, "server.pem"), "x"):                "looks like a secret",
		write(t, filepath.Join(ws, "tls.key"), "x"):                   "looks like a secret",
		write(t, filepath.Join(ws, "cert.p12"), "x"):                  "looks like a secret",
		write(t, filepath.Join(ws, "cert.pfx"), "x"):                  "looks like a secret",
		write(t, filepath.Join(ws, "vault.kdbx"), "x"):                "looks like a secret",
		write(t, filepath.Join(ws, "keys", "id_ed25519"), "x"):        "looks like a secret",
		write(t, filepath.Join(ws, "credentials", "report.txt"), "x"): "looks like a secret",
	}
	for _, c := range credentialPaths {
		p := filepath.Join(f.user, c)
		fileLike := map[string]bool{".netrc": true, ".git-credentials": true, ".npmrc": true, ".pypirc": true,
			".cargo/credentials": true, ".cargo/credentials.toml": true, ".claude.json": true}
		if !fileLike[c] {
			p = filepath.Join(p, "file.txt")
		}
		cases[write(t, p, "x")] = "credential location (~/" + c + ")"
	}
	for p, want := range cases {
		_, _, err := call(t, f.set.attach, f.env, map[string]any{"path": p})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a refusal with %q", p, err, want)
		}
	}
	// What is allowed in SCV_HOME: files chat users sent, this chat's kept files.
	for _, p := range []string{
		write(t, filepath.Join(f.media, "a1-cat.jpg"), "x"),
		write(t, filepath.Join(MediaRoot(f.home), "wechat", "default", "peer", "dog.jpg"), "x"),
		write(t, filepath.Join(f.archive, "feishu", "default", "oc_1", "files", "kept.jpg"), "x"),
	} {
		if res, _, err := call(t, f.set.attach, f.env, map[string]any{"path": p}); err != nil || !res.Success {
			t.Errorf("%s: %v %+v", p, err, res)
		}
	}
	// An archive outside SCV_HOME is refused the same way.
	outside := t.TempDir()
	s := &Set{opts: f.set.opts}
	s.opts.Archive = outside
	s.logDir = filepath.Join(outside, "feishu", "default", "oc_1")
	s.attach = &Attach{set: s}
	for p, want := range map[string]string{
		write(t, filepath.Join(outside, "feishu", "default", "oc_2", "files", "a.txt"), "x"): "chat archive",
		write(t, filepath.Join(s.logDir, "2026", "w", "e.jsonl"), "x"):                       "chat archive",
		write(t, filepath.Join(s.logDir, "files", "mine.txt"), "x"):                          "",
	} {
		_, _, err := call(t, s.attach, f.env, map[string]any{"path": p})
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("archive outside SCV_HOME, %s: %v", p, err)
		}
	}
	if _, _, err := call(t, f.set.attach, f.env, map[string]any{"path": "ok.txt", "caption": strings.Repeat("é", 600)}); err == nil {
		t.Error("a caption over 1 KiB was accepted")
	}
}

// TestAttachScvUnderUserHome: with the default SCV_HOME, ~/.scv, the media
// stays sendable while the rest of ~/.scv is refused.
func TestAttachScvUnderUserHome(t *testing.T) {
	t.Parallel()
	user := t.TempDir()
	home := filepath.Join(user, ".scv")
	s, err := New(Options{Home: home, UserHome: user, Archive: filepath.Join(home, "archive"),
		Channel: protocol.Channel{Platform: "wechat", Account: "default", Conversation: "p1", Log: true}})
	if err != nil {
		t.Fatal(err)
	}
	env := toolstest.Env(t, nil)
	media := write(t, filepath.Join(s.media, "photo.jpg"), "x")
	if _, _, err := call(t, s.attach, env, map[string]any{"path": media}); err != nil {
		t.Errorf("media under ~/.scv: %v", err)
	}
	cfg := write(t, filepath.Join(home, "config.toml"), "x")
	if _, _, err := call(t, s.attach, env, map[string]any{"path": cfg}); err == nil {
		t.Error("~/.scv/config.toml was accepted")
	}
}

func TestAttachCapsFilesPerReply(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 10 {
		files[string(rune('a'+i))+".txt"] = "x"
	}
	f := newFixture(t, files)
	f.env.TurnID = "t1"
	for i := range 9 {
		_, _, err := call(t, f.set.attach, f.env, map[string]any{"path": string(rune('a'+i)) + ".txt"})
		if i < MaxFilesPerReply && err != nil {
			t.Fatalf("file %d: %v", i+1, err)
		}
		if i == MaxFilesPerReply && (err == nil || !strings.Contains(err.Error(), "was not sent: a reply carries at most 8 files")) {
			t.Fatalf("the ninth file: %v", err)
		}
	}
	if ents, _ := filepath.Glob(filepath.Join(OutboxDir(f.home), "*.json")); len(ents) != 8 {
		t.Errorf("%d records in the outbox, want 8", len(ents))
	}
	f.env.TurnID = "t2"
	if _, _, err := call(t, f.set.attach, f.env, map[string]any{"path": "j.txt"}); err != nil {
		t.Errorf("the next reply starts a new count: %v", err)
	}
}

func TestAttachRechecksThroughTheHandle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"report.txt": "x"})
	secret := write(t, filepath.Join(f.user, "secret.txt"), "secret")
	plan, err := f.set.attach.Prepare(f.env, toolstest.Args(t, map[string]any{"path": "report.txt"}))
	if err != nil {
		t.Fatal(err)
	}
	// Between the check and the run, the file becomes a link.
	p := filepath.Join(f.env.Workspace, "report.txt")
	_ = os.Remove(p)
	if err := os.Symlink(secret, p); err != nil {
		t.Fatal(err)
	}
	res, err := plan.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Success || !strings.Contains(res.Output, "not sent") {
		t.Fatalf("a file swapped for a link was sent: %+v", res)
	}
	// Replaced by another regular file: not the file checked.
	plan, _ = f.set.attach.Prepare(f.env, toolstest.Args(t, map[string]any{"path": secret}))
	write(t, secret+".new", "other")
	if err := os.Rename(secret+".new", secret); err != nil {
		t.Fatal(err)
	}
	if res, _ := plan.Run(context.Background()); res.Success {
		t.Fatalf("a replaced file was sent: %+v", res)
	}
	if ents, _ := os.ReadDir(OutboxDir(f.home)); len(ents) != 0 {
		t.Errorf("the outbox holds %d entries after refusals", len(ents))
	}
}
