package wechat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/wechat/ilinktest"
)

func login(t *testing.T, fs *ilinktest.Server, out *strings.Builder) (Credentials, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return Login(ctx, LoginOptions{BaseURL: fs.URL, HTTPClient: fs.Client(), Out: out, Interval: time.Millisecond})
}

func TestLoginConfirmedAndStored(t *testing.T) {
	t.Parallel()
	fs := ilinktest.New()
	defer fs.Close()
	fs.SetQRScript("wait", "scaned", "scaned", "confirmed")
	var out strings.Builder
	c, err := login(t, fs, &out)
	if err != nil {
		t.Fatal(err)
	}
	if c.Token != ilinktest.BotToken || c.OwnerID != ilinktest.OwnerID || c.BotID != ilinktest.BotID || c.BaseURL != fs.URL {
		t.Fatalf("credentials %#v", c)
	}
	if !strings.Contains(out.String(), "█") || !strings.Contains(out.String(), "liteapp.weixin.qq.com/q/qr-1") ||
		strings.Count(out.String(), "Scanned") != 1 {
		t.Errorf("terminal output:\n%s", out.String())
	}
	for _, s := range []string{c.String(), fmt.Sprintf("%v %+v %#v", c, c, c)} {
		if strings.Contains(s, ilinktest.BotToken) {
			t.Errorf("the token is shown: %s", s)
		}
	}
	path := filepath.Join(t.TempDir(), "channels", "wechat", "home.json")
	if err := WriteCredentials(path, c); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	back, err := ReadCredentials(path)
	if err != nil || back.Token != c.Token || back.OwnerID != c.OwnerID {
		t.Fatalf("read back %v, %v", back, err)
	}
	_ = os.Chmod(path, 0o644)
	if _, err := ReadCredentials(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable file: %v", err)
	}
	if _, err := ReadCredentials(filepath.Join(t.TempDir(), "none.json")); !errors.Is(err, ErrNotBound) {
		t.Errorf("missing file: %v", err)
	}
}

func TestLoginExpiredCodeIsRenewed(t *testing.T) {
	t.Parallel()
	fs := ilinktest.New()
	defer fs.Close()
	fs.SetQRScript("wait", "expired", "scaned", "confirmed")
	var out strings.Builder
	c, err := login(t, fs, &out)
	if err != nil || c.OwnerID != ilinktest.OwnerID {
		t.Fatalf("%v, %v", c, err)
	}
	if !strings.Contains(out.String(), "/q/qr-2") || !strings.Contains(out.String(), "fresh") {
		t.Errorf("no second code drawn:\n%s", out.String())
	}

	always := ilinktest.New()
	defer always.Close()
	always.SetQRScript("expired")
	if _, err := login(t, always, &strings.Builder{}); !errors.Is(err, ErrLoginExpired) {
		t.Errorf("codes expiring forever: %v", err)
	}
}

func TestLoginFollowsRedirect(t *testing.T) {
	t.Parallel()
	a, b := ilinktest.New(), ilinktest.New()
	defer a.Close()
	defer b.Close()
	a.SetQRScript("scaned", "scaned_but_redirect", "wait")
	a.RedirectTo(b)
	b.SetQRScript("scaned", "confirmed")
	c, err := login(t, a, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if b.StatusPolls() != 2 || a.StatusPolls() != 2 || c.BaseURL != b.URL {
		t.Errorf("polls a=%d b=%d, base %s (want %s)", a.StatusPolls(), b.StatusPolls(), c.BaseURL, b.URL)
	}
}

func TestLoginRefusals(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]error{"binded_redirect": ErrAlreadyBound, "need_verifycode": ErrVerifyNeeded, "odd": errUnknownStatus} {
		fs := ilinktest.New()
		fs.SetQRScript("wait", status)
		if _, err := login(t, fs, &strings.Builder{}); !errors.Is(err, want) {
			t.Errorf("%s: %v", status, err)
		}
		fs.Close()
	}
}

func TestLoginSurvivesAFailingPoll(t *testing.T) {
	t.Parallel()
	fs := ilinktest.New()
	defer fs.Close()
	fs.SetQRScript("wait", "busy", "confirmed")
	if _, err := login(t, fs, &strings.Builder{}); err != nil {
		t.Fatalf("one 503 during the status polls: %v", err)
	}
	always := ilinktest.New()
	defer always.Close()
	always.SetQRScript("busy")
	var ae *APIError
	if _, err := login(t, always, &strings.Builder{}); !errors.As(err, &ae) || ae.HTTPStatus != 503 {
		t.Fatalf("a server that stays down: %v", err)
	}
}
