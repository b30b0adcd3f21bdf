package chat

import (
	"path/filepath"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/tools/workspace"
	"github.com/scv-cli/scv/shared/chatlog"
)

// hostSecrets are the host's secret locations chat_attach refuses.
var hostSecrets = []string{"/etc/shadow", "/etc/gshadow", "/etc/ssh", "/etc/sudoers", "/etc/sudoers.d", "/root", "/proc", "/sys", "/dev"}

// credentialPaths are the credential and key locations under the user's
// home that chat_attach refuses, relative to it.
var credentialPaths = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".git-credentials",
	".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
	".config/gh", ".config/gcloud", ".config/hub", ".password-store", ".local/share/keyrings",
	".codex", ".claude", ".claude.json", ".grok", ".scv",
	// Browser profiles: cookies, saved passwords, session tokens.
	".mozilla", ".librewolf", ".thunderbird", "snap/firefox", "snap/chromium",
	".var/app/org.mozilla.firefox", ".var/app/com.google.Chrome", ".var/app/org.chromium.Chromium",
	".config/google-chrome", ".config/google-chrome-beta", ".config/chromium", ".config/BraveSoftware",
	".config/microsoft-edge", ".config/vivaldi", ".config/opera",
	"Library/Application Support/Google/Chrome", "Library/Application Support/Firefox",
	"Library/Application Support/BraveSoftware", "Library/Application Support/Microsoft Edge",
	"Library/Safari", "Library/Keychains", "Library/Cookies",
}

// refusal says why chat_attach refuses the absolute, clean path p, or ""
// when nothing does. Every directory is checked as given and with its
// symbolic links resolved, so a link to a secret place is caught either
// way.
func (s *Set) refusal(p string) string {
	for _, h := range hostSecrets {
		if within(p, h) {
			return "it is a host secret location (" + h + ")"
		}
	}
	exempt := s.exempt(p)
	if !exempt {
		for _, home := range both(s.opts.Home) {
			if within(p, home) {
				return "it is in SCV's instance directory (" + s.opts.Home + "), whose settings, credentials and state are never sent; only files chat users sent and this chat's kept files are"
			}
		}
	}
	if !exempt {
		// Wherever the archive is, its logs and other chats' kept files
		// stay on this machine, like SCV_HOME's.
		for _, archive := range both(s.opts.Archive) {
			if within(p, archive) {
				return "it is in the chat archive (" + s.opts.Archive + "), whose logs and other chats' files are never sent; only this chat's kept files are"
			}
		}
	}
	if s.opts.UserHome != "" {
		for _, home := range both(s.opts.UserHome) {
			for _, c := range credentialPaths {
				if exempt && c == ".scv" {
					continue
				}
				if within(p, filepath.Join(home, c)) {
					return "it is in a credential location (~/" + c + ")"
				}
			}
		}
	}
	for _, part := range strings.Split(p, string(filepath.Separator)) {
		if part != "" && workspace.SecretLike(part) {
			return "its name (" + part + ") looks like a secret (a key, certificate, credential or .env file)"
		}
	}
	return ""
}

// exempt reports whether p is in a place of SCV_HOME that chat_attach may
// send from: the chat media (not the outbox), or this chat's kept files.
func (s *Set) exempt(p string) bool {
	for _, home := range both(s.opts.Home) {
		media := MediaRoot(home)
		if within(p, media) && p != media && !within(p, filepath.Join(media, chatlog.OutboxDirName)) {
			return true
		}
	}
	if s.logDir != "" {
		for _, kept := range both(chatlog.FilesDir(s.logDir)) {
			if within(p, kept) && p != kept {
				return true
			}
		}
	}
	return false
}

// both returns dir as given and with its links resolved.
func both(dir string) []string {
	if dir == "" {
		return nil
	}
	clean := filepath.Clean(dir)
	if r := resolvedDir(clean); r != clean {
		return []string{clean, r}
	}
	return []string{clean}
}
